//go:build !linux

package broker

import (
	"errors"

	"github.com/garuda-dev/garuda/broker/permit"
)

var errUndoLinux = errors.New("undo needs Linux (openat2)")

func restoreFile(permit.Permit, []byte, bool) error     { return errUndoLinux }
func currentFile(permit.Permit) ([32]byte, bool, error) { return [32]byte{}, false, errUndoLinux }
