//go:build unix

package childenv

// names are the variables a child inherits on Unix.
var names = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
