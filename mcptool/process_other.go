//go:build !unix

package mcptool

import "os/exec"

// ownProcessGroup does nothing where process groups do not exist; Close
// still ends the server itself.
func ownProcessGroup(*exec.Cmd) {}

func killProcessGroup(int) {}

// defaultEnvNames are the variables a server inherits on Windows and the
// rest: those the official SDKs pass there.
var defaultEnvNames = []string{
	"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
	"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES",
}
