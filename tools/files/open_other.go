//go:build !unix

package files

import "os"

// openFlags opens a file to read. Named pipes do not live among files here.
const openFlags = os.O_RDONLY
