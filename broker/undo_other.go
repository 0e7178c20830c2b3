//go:build !linux

package broker

import "errors"

var errUndoLinux = errors.New("undo needs Linux (openat2)")

func restoreFile(string, []byte, bool) error     { return errUndoLinux }
func currentFile(string) ([32]byte, bool, error) { return [32]byte{}, false, errUndoLinux }
