package fsops

import (
	"context"
	"fmt"

	"github.com/garuda-dev/garuda/broker/permit"
	"github.com/garuda-dev/garuda/policy"
)

// The exported operations take the permit of the decision on their path, and open nothing else: the path
// opened is the permit's. Defends against an operation that opens, reads or matches a file before the policy
// has decided on it (an oracle on the file's content, existence or type).

// Read is read_file of the permit's path: lines numbered like `cat -n`, from req.Offset (1-based), at most
// req.Limit lines, each cut at Limits.LineChars characters, the whole cut at Limits.ReadBytes, with a note saying
// what was cut and how to read on. Binary content fails with ErrBinary; invalid UTF-8 is shown as U+FFFD with a
// note. req.Path is ignored: the permit names the path.
func (r *Root) Read(ctx context.Context, p permit.Permit, req ReadRequest) (*ReadResult, error) {
	if err := p.CheckAct(p.Path(), policy.KindRead); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	_, inside := r.Abs(p.Path())
	req.Path, req.Outside = p.Path(), !inside
	return r.read(ctx, req)
}

// PrepareWrite is write_file's first half: it reads the pre-image of the permit's path (if any) and returns the
// exact bytes that Commit will write. p must permit at least a preview of a write.
func (r *Root) PrepareWrite(p permit.Permit, content []byte) (*Pending, error) {
	if err := p.CheckPreview(p.Path(), policy.KindWrite, policy.KindEdit); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	if _, inside := r.Abs(p.Path()); !inside {
		return r.prepareWriteOutside(p.Path(), content)
	}
	return r.prepareWrite(p.Path(), content)
}

// PrepareEdit is edit_file's first half: oldString must occur exactly once in the permit's path (or at least once
// with replaceAll); otherwise ErrNoMatch or ErrManyMatches with the count. p must permit at least a preview.
func (r *Root) PrepareEdit(p permit.Permit, oldString, newString string, replaceAll bool) (*Pending, error) {
	if err := p.CheckPreview(p.Path(), policy.KindEdit); err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	if _, inside := r.Abs(p.Path()); !inside {
		return r.prepareEditOutside(p.Path(), oldString, newString, replaceAll)
	}
	return r.prepareEdit(p.Path(), oldString, newString, replaceAll)
}

// Commit writes a prepared change, if the file still has the pre-image it had at Prepare (else ErrChanged). p must
// permit the act on the pending write's path. before, if set, runs once the pre-image is checked and before the
// file is replaced (undo's snapshot); its error stops the write.
func (r *Root) Commit(p permit.Permit, pend *Pending, before func(abs string, old []byte, existed bool) error) error {
	if err := p.CheckAct(pend.Abs, policy.KindWrite, policy.KindEdit); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return r.commit(pend, before)
}

// Glob lists the files below the permit's folder whose path matches pattern, newest first; allow decides each
// file before it is listed (it must be safe for concurrent use).
func (r *Root) Glob(ctx context.Context, p permit.Permit, pattern string, allow func(abs string) bool) (*ListResult, error) {
	if err := p.CheckAct(p.Path(), policy.KindSearch); err != nil {
		return nil, fmt.Errorf("glob: %w", err)
	}
	return r.glob(ctx, pattern, p.Path(), allow)
}

// Grep searches the permit's path (a file, or a folder and everything below it) for req.Pattern; allow decides
// each file before it is opened. req.Path is ignored: the permit names the path.
func (r *Root) Grep(ctx context.Context, p permit.Permit, req GrepRequest, allow func(abs string) bool) (*ListResult, error) {
	if err := p.CheckAct(p.Path(), policy.KindSearch); err != nil {
		return nil, fmt.Errorf("grep: %w", err)
	}
	req.Path = p.Path()
	return r.grep(ctx, req, allow)
}
