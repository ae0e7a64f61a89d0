package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

const selfExe = "/proc/self/exe"

// minABI is the first Landlock ABI with TCP rules, which a Policy needs.
const minABI = 4

// Check returns nil if this kernel can enforce a [Policy], and otherwise
// an error wrapping [ErrUnsupported] that says why.
func Check() error {
	v, err := ll.LandlockGetABIVersion()
	switch {
	case err != nil:
		return fmt.Errorf("%w: Landlock is not enabled in this kernel (%v)", ErrUnsupported, err)
	case v < minABI:
		return fmt.Errorf("%w: the kernel's Landlock ABI is %d; file and TCP rules need %d", ErrUnsupported, v, minABI)
	}
	return nil
}

// init runs the helper when this binary was started by [Command]: it never
// returns then. In every other start it does nothing.
func init() {
	if len(os.Args) < 3 || os.Args[0] != helperArg0 {
		return
	}
	err := enter(os.Args[1], os.Args[2], os.Args[3:])
	// enter returns only if it could not confine or exec: the command must
	// not run unconfined.
	fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
	os.Exit(126) // as bash exits for a command it cannot execute
}

// enter confines the current thread to the policy in spec and replaces the
// process with bin, which keeps the thread's Landlock domain.
func enter(spec, bin string, args []string) error {
	var p Policy
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		return fmt.Errorf("the policy: %w", err)
	}
	// Landlock and no_new_privs are per thread; exec runs on this one.
	runtime.LockOSThread()
	fd, _, err := rules(p)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	unix.Close(fd)
	return syscall.Exec(bin, append([]string{bin}, args...), os.Environ())
}

// rules returns a Landlock ruleset for p: everything readable and
// executable, p.Write and a few device files writable, and, unless p.Net,
// no TCP connect or bind. Abstract UNIX sockets and signals are scoped to
// the domain where the kernel can (ABI 6), so that a confined command
// cannot ask an unconfined process to act for it.
func rules(p Policy) (int, uint32, error) {
	cfg := landlock.V7.BestEffort()
	if p.Net {
		cfg.HandledAccessNet = 0
	}
	return cfg.NewRulesetFD(
		landlock.RODirs("/"),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty").WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs(p.Write...).WithRefer().IgnoreIfMissing(),
	)
}
