package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/garuda-dev/garuda/internal/headtail"
)

// outputSink keeps the head and a ring of the tail of a command's output in bounded memory, saves the output's first
// MaxOutputFile bytes to a file and streams every chunk. Bounding memory and the file defends the broker and the disk
// against a command (or an MCP server's log) that prints gigabytes.
type outputSink struct {
	kept     *headtail.Buffer
	file     *os.File
	fileErr  error
	saved    int64 // bytes written to the file
	dropped  bool  // output past MaxOutputFile was not saved
	onOutput func([]byte)
}

// keepEach is how much of the output's head, and of its tail, the result keeps.
const keepEach = KeepOutput / 2

func newOutputSink(path string, onOutput func([]byte)) (*outputSink, error) {
	s := &outputSink{onOutput: onOutput, kept: headtail.New(keepEach)}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create output file %s: %w", path, err)
		}
		s.file = f
	}
	return s, nil
}

func (s *outputSink) write(p []byte) {
	if s.onOutput != nil {
		s.onOutput(append([]byte(nil), p...))
	}
	if s.file != nil && s.fileErr == nil {
		keep := min(int64(len(p)), MaxOutputFile-s.saved)
		n, err := s.file.Write(p[:keep])
		s.saved += int64(n)
		s.fileErr, s.dropped = err, s.dropped || keep < int64(len(p))
	}
	s.kept.Write(p)
}

// copyFrom reads r to EOF into the sink.
func (s *outputSink) copyFrom(r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// finish closes the file and returns the kept output, whether bytes were cut, and a notice if saving failed.
func (s *outputSink) finish(path string) (out []byte, truncated bool, notice string) {
	if s.file != nil {
		if err := s.file.Close(); err != nil && s.fileErr == nil {
			s.fileErr = err
		}
		if s.fileErr != nil {
			notice = fmt.Sprintf("saving the full output to %s failed: %v", path, s.fileErr)
			path = ""
		}
	}
	head, tail, cut := s.kept.Head(), s.kept.Tail(), s.kept.Cut()
	if cut == 0 {
		return append(append([]byte(nil), head...), tail...), false, notice
	}
	where := ""
	switch {
	case path != "" && s.dropped:
		where = fmt.Sprintf("; the first %d MiB of the output are in %s", MaxOutputFile>>20, path)
	case path != "":
		where = "; full output in " + path
	}
	out = append([]byte(nil), head...)
	out = append(out, fmt.Sprintf("\n[... %d bytes cut%s ...]\n", cut, where)...)
	out = append(out, tail...)
	return out, true, notice
}

// Bound keeps the head and the tail of b as Result.Output keeps a command's output (KeepOutput bytes, a note where
// bytes were cut), for other results that are bounded like it; with a path, all of b is saved there (0600) first
// and the note says so.
func Bound(b []byte, path string) (out []byte, cut bool, err error) {
	s, err := newOutputSink(path, nil)
	if err != nil {
		return nil, false, err
	}
	s.write(b)
	out, cut, notice := s.finish(path)
	if notice != "" {
		err = errors.New(notice)
	}
	return out, cut, err
}
