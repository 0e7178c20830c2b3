// Covering a secret file: /dev/null bound over it, read-only.

package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func hideFile(p string) error {
	if err := unix.Mount(os.DevNull, p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("hide file %s: %w", p, err)
	}
	if err := makeReadOnly(p); err != nil {
		return err
	}
	return nil
}
