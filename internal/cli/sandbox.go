package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/tools/sandbox"
)

// The --sandbox modes.
const (
	sandboxWorkspace = "workspace"
	sandboxOff       = "off"
)

// sandboxCheck is sandbox.Check, which a test replaces to play a kernel
// without Landlock.
var sandboxCheck = sandbox.Check

// checkSandbox settles --sandbox: an explicit workspace where the kernel
// cannot confine is a usage error, never an unconfined run; the default is
// workspace where it can, and otherwise off with a notice.
func (b *builtinOptions) checkSandbox() error {
	switch b.sandbox {
	case "", sandboxWorkspace, sandboxOff:
	default:
		return usageError("--sandbox %q: the modes are workspace and off", b.sandbox)
	}
	if b.sandbox == sandboxOff {
		if b.sandboxNet {
			return usageError("--sandbox-net gives a sandbox network access, but --sandbox is off")
		}
		return nil
	}
	err := sandboxCheck()
	switch {
	case err == nil:
		b.sandbox = sandboxWorkspace
	case b.sandbox == sandboxWorkspace:
		return usageError("--sandbox workspace: %v", err)
	default:
		b.sandbox = sandboxOff
		b.sandboxNotice = fmt.Sprintf("agentloop: bash runs unconfined: %v (--sandbox off hides this notice)", err)
	}
	return nil
}

// sandboxPolicy returns the policy for bash in dir, nil when --sandbox is
// off, and the environment bash starts from.
//
// Writable are the working directory, each --add-dir, the temporary
// directory, and a build cache of agentloop's own. Go and npm are pointed
// at that cache, not at the user's: an entry a confined command wrote into
// the user's Go build cache would be trusted by the user's next build
// outside the sandbox. The module and npm caches stay readable, so that
// what was downloaded before builds offline. Without a user cache
// directory (no HOME, or one it cannot write) there is no cache to point
// them at, and go build fails as it would without the sandbox.
func (b *builtinOptions) sandboxPolicy(dir string, env []string) (*sandbox.Policy, []string, error) {
	if b.sandbox != sandboxWorkspace {
		return nil, env, nil
	}
	p := &sandbox.Policy{Net: b.sandboxNet, Write: []string{dir, os.TempDir()}}
	for _, d := range b.addDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, nil, usageError("--add-dir %s: %v", d, err)
		}
		p.Write = append(p.Write, abs)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		// Without a home, Go has no build cache either: nothing to point.
		return p, env, nil
	}
	cache = filepath.Join(cache, "agentloop", "sandbox")
	goCache := filepath.Join(cache, "go-build")
	if err := os.MkdirAll(goCache, 0o700); err != nil {
		// An unwritable home: Go's own cache is no more writable than ours.
		return p, env, nil
	}
	p.Write = append(p.Write, cache)
	env = append(env[:len(env):len(env)], "GOCACHE="+goCache, "npm_config_cache="+filepath.Join(cache, "npm"))
	return p, env, nil
}
