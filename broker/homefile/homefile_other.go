//go:build !unix

package homefile

import (
	"errors"
	"os"
)

// NoFollow is not available here; Lock refuses instead, so nothing is written unlocked.
const NoFollow = 0

var errUnsupported = errors.New("file locks need a Unix system; the broker runs on Linux")

// Lock refuses on this system.
func Lock(*os.File) error { return errUnsupported }

// LockShared refuses on this system.
func LockShared(*os.File) error { return errUnsupported }

// Unlock does nothing on this system.
func Unlock(*os.File) error { return nil }

// TryLock refuses on this system.
func TryLock(*os.File) error { return errUnsupported }
