//go:build !linux

package conffile

import (
	"errors"
	"io/fs"
)

var errNoOpenat2 = errors.New("reading a folder's configuration confined to it needs Linux (openat2)")

// Dir is not available here: OpenDir fails, so nothing is read unconfined.
type Dir struct{}

// OpenDir fails on this system.
func OpenDir(path string) (*Dir, error) { return nil, errNoOpenat2 }

// Close does nothing.
func (d *Dir) Close() error { return nil }

// Open fails on this system.
func (d *Dir) Open(rel string, max int64) (*File, error) { return nil, errNoOpenat2 }

// Read fails on this system.
func (d *Dir) Read(rel string, max int64) ([]byte, error) { return nil, errNoOpenat2 }

// FS fails on this system.
func (d *Dir) FS() (fs.FS, error) { return nil, errNoOpenat2 }

// ReadIn fails on this system.
func ReadIn(dir, rel string, max int64) ([]byte, error) { return nil, errNoOpenat2 }

// OpenAt fails on this system.
func OpenAt(dirfd int, rel string, max int64) (*File, error) { return nil, errNoOpenat2 }
