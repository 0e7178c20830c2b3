//go:build linux

package fsops

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// read is Read of req.Path: lines numbered like `cat -n`, from req.Offset (1-based), at most req.Limit lines, each cut at
// Limits.LineChars characters, the whole cut at Limits.ReadBytes, with a note saying what was cut and how to read on.
// Binary content fails with ErrBinary; invalid UTF-8 is shown as U+FFFD with a note.
func (r *Root) read(ctx context.Context, req ReadRequest) (*ReadResult, error) {
	t, err := r.resolve(req.Path, req.Outside, resolveRead)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", req.Path, err)
	}
	defer t.close()
	real := t.abs
	if !t.outside {
		// A symlink beneath the root may lead elsewhere in the root (README -> .env): policy decided on the path
		// asked, so where the links lead is decided again before it is looked at, and the file opened is exactly
		// that path (no symlink followed by the open).
		realRel, err := r.follow(t.rel, req.Recheck)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t.abs, err)
		}
		if realRel != t.rel {
			real = filepath.Join(r.path, filepath.FromSlash(realRel))
			if req.Recheck != nil && !req.Recheck(real) {
				return nil, fmt.Errorf("read %s: a symlink leads to %s: %w", t.abs, real, ErrDenied)
			}
		}
		t.rel, t.flags = realRel, resolveWrite
	}
	f, _, err := openRegular(t)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.abs, err)
	}
	defer f.Close()

	lim := r.Limits
	first := max(req.Offset, 1)
	limit := req.Limit
	if limit <= 0 {
		limit = lim.ReadLines
	}
	res := &ReadResult{Abs: t.abs, Real: real, FirstLine: first, Location: Location{Path: t.abs, Line: first}}

	// The scan cap bounds the bytes read whatever the file's size (a 5 GB sparse file, a huge log).
	br := bufio.NewReaderSize(io.LimitReader(f, lim.ScanBytes+1), 64<<10)
	var (
		out       []byte
		scanned   int64
		lineNo    = 0
		cutLines  []int
		badUTF8   bool
		stopNote  string
		line      []byte
		lineBytes int64
		maxKeep   = lim.LineChars * utf8.UTFMax
	)
	for {
		if lineNo%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("read %s: %w", t.abs, err)
			}
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			scanned += int64(len(chunk))
			if scanned > lim.ScanBytes {
				return nil, fmt.Errorf("read %s: line %d is beyond the first %d MiB: %w; search it with grep instead",
					t.abs, lineNo+1, lim.ScanBytes>>20, ErrTooLarge)
			}
			// NUL bytes mean binary content; they are never shown as text.
			if i := bytes.IndexByte(chunk, 0); i >= 0 {
				return nil, fmt.Errorf("read %s: byte %d: %w", t.abs, scanned-int64(len(chunk))+int64(i), ErrBinary)
			}
			if lineNo+1 >= first && len(line) < maxKeep {
				line = append(line, chunk[:min(len(chunk), maxKeep-len(line))]...)
			}
			lineBytes += int64(len(chunk))
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read %s: %w", t.abs, err)
		}
		if lineBytes == 0 { // end of file
			break
		}
		lineNo++
		if lineNo >= first {
			if res.Lines == limit {
				res.More = true
				break
			}
			text := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			s, cut, bad := shownLine(text, lim.LineChars, lineBytes > int64(len(line)))
			if cut {
				cutLines = append(cutLines, lineNo)
			}
			badUTF8 = badUTF8 || bad
			before := len(out)
			out = appendNumbered(out, lineNo, s)
			if len(out) > lim.ReadBytes && res.Lines > 0 {
				out = out[:before]
				res.More = true
				stopNote = fmt.Sprintf("output cut at %d KiB", lim.ReadBytes>>10)
				break
			}
			res.Lines++
		}
		line, lineBytes = line[:0], 0
		if err == io.EOF {
			break
		}
	}
	res.Text = string(out)

	var notes []string
	last := first + res.Lines - 1
	switch {
	case lineNo == 0:
		notes = append(notes, "the file is empty")
	case res.Lines == 0:
		notes = append(notes, fmt.Sprintf("the file has only %d lines; offset=%d is past its end", lineNo, first))
	case res.More:
		why := stopNote
		if why == "" {
			why = fmt.Sprintf("showing lines %d-%d", first, last)
		} else {
			why += fmt.Sprintf(" after line %d", last)
		}
		notes = append(notes, fmt.Sprintf("%s; the file has more lines: read on with offset=%d", why, last+1))
	}
	if len(cutLines) > 0 {
		notes = append(notes, fmt.Sprintf("%d line(s) longer than %d characters were cut (first: line %d)",
			len(cutLines), lim.LineChars, cutLines[0]))
	}
	if badUTF8 {
		notes = append(notes, "invalid UTF-8 bytes are shown as U+FFFD")
	}
	res.Note = strings.Join(notes, "; ")
	return res, nil
}

// shownLine cuts a line at n characters and replaces invalid UTF-8; longer says bytes were already dropped.
func shownLine(b []byte, n int, longer bool) (s string, cut, bad bool) {
	if len(b) <= n && utf8.Valid(b) { // the common case: short enough in bytes, so in characters too
		return string(b), longer, false
	}
	count := 0
	for i := 0; i < len(b); {
		if count == n {
			b, cut = b[:i], true
			break
		}
		c, size := utf8.DecodeRune(b[i:])
		if c == utf8.RuneError && size <= 1 {
			bad = true
		}
		i += size
		count++
	}
	if longer {
		cut = true
	}
	if bad || !utf8.Valid(b) {
		bad = true
		return strings.ToValidUTF8(string(b), "\uFFFD"), cut, bad
	}
	return string(b), cut, false
}

// appendNumbered writes "%6d\t%s\n".
func appendNumbered(out []byte, n int, s string) []byte {
	var num [20]byte
	d := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(d); i < 6; i++ {
		out = append(out, ' ')
	}
	out = append(out, d...)
	out = append(out, '\t')
	out = append(out, s...)
	return append(out, '\n')
}
