// The head and tail of a command's output.

package sandbox

import (
	"bytes"
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
