package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrBroken is wrapped by every *BrokenError.
var ErrBroken = errors.New("audit chain broken")

// BrokenError names the first record of a file that does not verify.
type BrokenError struct {
	Path   string
	Line   int // 1-based
	Reason string
}

func (e *BrokenError) Error() string {
	return fmt.Sprintf("%s: line %d: %s", e.Path, e.Line, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBroken) true.
func (e *BrokenError) Unwrap() error { return ErrBroken }

// Verify checks that every line of the file at path is a record in canonical form whose Hash matches its content
// and whose Prev is the Hash of the line before ("" for the first). It returns the number of records that verified
// and, on failure, a *BrokenError naming the first broken line. Records cut off the end of a file cannot be seen by
// a chain.
func Verify(path string) (n int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("verify audit log: %w", err)
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 64<<10)
	prev := ""
	for line := 1; ; line++ {
		raw, rerr := rd.ReadBytes('\n')
		if len(raw) == 0 && errors.Is(rerr, io.EOF) {
			return n, nil
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return n, fmt.Errorf("verify audit log %s: line %d: %w", path, line, rerr)
		}
		broken := func(format string, a ...any) error {
			return &BrokenError{Path: path, Line: line, Reason: fmt.Sprintf(format, a...)}
		}
		if rerr != nil { // EOF with bytes left: the last write was torn
			return n, broken("incomplete line (no newline at the end of the file)")
		}
		body := raw[:len(raw)-1]
		var r Record
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return n, broken("not a valid record: %v", err)
		}
		if dec.More() {
			return n, broken("not a valid record: data after the record")
		}
		// Re-encoding must give the very same bytes: a field added, reordered or re-escaped is an edit too.
		again, err := json.Marshal(&r)
		if err != nil {
			return n, broken("cannot re-encode the record: %v", err)
		}
		if !bytes.Equal(again, body) {
			return n, broken("record is not in canonical form (edited?)")
		}
		sum, err := digest(&r)
		if err != nil {
			return n, broken("%v", err)
		}
		if sum != r.Hash {
			return n, broken("hash does not match the record's content (record changed)")
		}
		if r.Prev != prev {
			if line == 1 {
				return n, broken("first record's prev is %q, want \"\" (records removed from the start?)", r.Prev)
			}
			return n, broken("prev does not match the hash of line %d (record removed, inserted or reordered)", line-1)
		}
		prev = r.Hash
		n++
	}
}
