//go:build !linux

package cli

// protectProcess does nothing here: only Linux has a switch that hides a
// process's environment from the other processes of its user (see the
// README's section on secrets).
func protectProcess() {}
