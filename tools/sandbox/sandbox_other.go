//go:build !linux

package sandbox

import "fmt"

const selfExe = ""

// Check returns an error wrapping [ErrUnsupported]: only Linux has a
// sandbox here.
func Check() error {
	return fmt.Errorf("%w on this system: run agentloop in a container or VM to confine its commands", ErrUnsupported)
}
