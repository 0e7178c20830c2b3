// The head and tail of a command's output.

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestOutputSinkHeadTail(t *testing.T) {
	s, err := newOutputSink("", nil)
	must(t, err)
	s.write(bytes.Repeat([]byte("h"), keepEach))
	s.write(bytes.Repeat([]byte("m"), 100000))
	s.write(bytes.Repeat([]byte("t"), keepEach))
	out, trunc, _ := s.finish("")
	if !trunc || !bytes.HasPrefix(out, bytes.Repeat([]byte("h"), keepEach)) || !bytes.HasSuffix(out, bytes.Repeat([]byte("t"), keepEach)) ||
		!bytes.Contains(out, []byte("[... 100000 bytes cut ...]")) {
		t.Fatalf("bad head/tail (%d bytes)", len(out))
	}
	s, _ = newOutputSink("", nil)
	s.write([]byte("short"))
	if out, trunc, _ := s.finish(""); trunc || string(out) != "short" {
		t.Fatalf("short output: %q %v", out, trunc)
	}
}

// The saved output stops at MaxOutputFile: a command (or an MCP server's log on standard error) that prints for its
// whole timeout fills no disk. The result says that the file holds only the first part.
func TestOutputFileIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	s, err := newOutputSink(path, nil)
	must(t, err)
	chunk := bytes.Repeat([]byte("z"), 1<<20)
	for range MaxOutputFile>>20 + 3 {
		s.write(chunk)
	}
	s.write([]byte("THE-END"))
	out, trunc, notice := s.finish(path)
	fi, err := os.Stat(path)
	must(t, err)
	if fi.Size() != MaxOutputFile {
		t.Errorf("the saved output is %d bytes, want at most %d", fi.Size(), MaxOutputFile)
	}
	want := fmt.Sprintf("the first %d MiB of the output are in %s", MaxOutputFile>>20, path)
	if !trunc || notice != "" || !bytes.Contains(out, []byte(want)) || !bytes.HasSuffix(out, []byte("THE-END")) {
		t.Errorf("result (%v, %q) lacks %q: %q", trunc, notice, want, out[keepEach-10:keepEach+200])
	}
	// Under the bound the file is the whole output, and says so.
	small := filepath.Join(t.TempDir(), "small.txt")
	s, _ = newOutputSink(small, nil)
	s.write(bytes.Repeat([]byte("y"), 2*keepEach+10))
	if out, _, _ := s.finish(small); !bytes.Contains(out, []byte("full output in "+small)) {
		t.Errorf("a small output's note: %q", out[keepEach-10:keepEach+200])
	}
}
