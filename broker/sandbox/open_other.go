//go:build !unix

package sandbox

import "os"

// openNoFollow opens p for reading (commands, and so FIFOs planted by them, exist only on Linux).
func openNoFollow(p string) (*os.File, error) {
	return os.Open(p)
}
