//go:build !linux

package fsops

import (
	"context"
	"fmt"
)

// Root is unavailable on this platform: the confinement needs Linux's openat2.
type Root struct{ Limits Limits }

// OpenRoot fails: file tools need Linux (openat2).
func OpenRoot(dir string) (*Root, error) {
	return nil, fmt.Errorf("open root %s: %w", dir, ErrUnsupported)
}

func (r *Root) Close() error                { return nil }
func (r *Root) Path() string                { return "" }
func (r *Root) Real() string                { return "" }
func (r *Root) FDPath() string              { return "" }
func (r *Root) Abs(p string) (string, bool) { return p, false }

func (r *Root) read(ctx context.Context, req ReadRequest) (*ReadResult, error) {
	return nil, ErrUnsupported
}
func (r *Root) prepareWrite(path string, content []byte) (*Pending, error) {
	return nil, ErrUnsupported
}
func (r *Root) prepareWriteOutside(path string, content []byte) (*Pending, error) {
	return nil, ErrUnsupported
}
func (r *Root) prepareEdit(path, oldString, newString string, replaceAll bool) (*Pending, error) {
	return nil, ErrUnsupported
}
func (r *Root) prepareEditOutside(path, oldString, newString string, replaceAll bool) (*Pending, error) {
	return nil, ErrUnsupported
}
func (r *Root) commit(p *Pending, before func(abs string, old []byte, existed bool) error) error {
	return ErrUnsupported
}
func (r *Root) glob(ctx context.Context, pattern, path string, allow func(abs string) bool) (*ListResult, error) {
	return nil, ErrUnsupported
}
func (r *Root) grep(ctx context.Context, req GrepRequest, allow func(abs string) bool) (*ListResult, error) {
	return nil, ErrUnsupported
}
