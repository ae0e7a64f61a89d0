package cli

import "golang.org/x/sys/unix"

// protectProcess makes this process non-dumpable, so that no other process
// of the user, such as a command the model runs or an MCP server, can read
// its environment (the API key, the --secret-env variables) or its memory:
// /proc/PID/environ and /proc/PID/mem become root's alone, ps e shows
// nothing, and ptrace is refused. A child is dumpable again once it execs,
// so the tools it runs work as usual. It fails only under a seccomp policy
// that forbids prctl; the command then runs as before.
func protectProcess() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
