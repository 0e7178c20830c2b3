//go:build !linux

package guard

import (
	"fmt"
	"os"
)

// The broker acts on Linux only; elsewhere these keep the package building.
const (
	oNoFollow  = 0
	oNonblock  = 0
	oDirectory = 0
)

func statKey(p string) (key string, dir, ok bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", false, false
	}
	return fmt.Sprintf("%d:%d:%o", fi.Size(), fi.ModTime().UnixNano(), fi.Mode()), fi.IsDir(), true
}
