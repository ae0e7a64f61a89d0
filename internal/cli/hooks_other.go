//go:build !unix

package cli

import "os/exec"

// hookShell runs a hook's command line.
var hookShell = []string{"cmd", "/C"}

// killGroupOnCancel does nothing: without Unix process groups, the end of
// cmd's context kills the hook's own process alone.
func killGroupOnCancel(*exec.Cmd) {}
