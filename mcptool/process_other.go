//go:build !unix

package mcptool

import "os/exec"

// ownProcessGroup does nothing where process groups do not exist; Close
// still ends the server itself.
func ownProcessGroup(*exec.Cmd) {}

func killProcessGroup(int) {}
