package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzVerify writes a chain of sealed records (their inputs fuzzed), alters the file once (a byte flipped, bytes
// inserted, deleted or replaced, the file cut), and verifies it. The untouched file verifies whole; an altered one
// either fails at the line after the records that verified, and those lines are the original's, or verifies and
// is then a prefix of the original, records cut off the end (which a chain cannot see).
func FuzzVerify(f *testing.F) {
	f.Add("echo a\necho b\necho c", uint8(0), uint16(40), []byte{1})
	f.Add("x", uint8(1), uint16(0), []byte(`{"extra":1,`))
	f.Add("a\nb\nc\nd", uint8(2), uint16(300), []byte("12345"))
	f.Add("a\nb", uint8(3), uint16(200), []byte("\n"))
	f.Add("a\nb\nc", uint8(4), uint16(500), []byte{})
	f.Add("\u2028\x00\"<>&\xff", uint8(0), uint16(100), []byte{0x20})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, inputs string, op uint8, at uint16, data []byte) {
		var orig []byte
		var ends []int // where each line of orig ends
		prev := ""
		for i, in := range strings.SplitN(inputs, "\n", 8) {
			r := Record{Time: time.Unix(1e9+int64(i), 0).UTC(), Event: EventExecution, Op: "bash", Input: in, Prev: prev,
				Detail: map[string]string{"n": in}}
			line, err := seal(&r)
			if err != nil {
				t.Fatal(err)
			}
			orig = append(orig, line...)
			ends = append(ends, len(orig))
			prev = r.Hash
		}
		p := filepath.Join(dir, "log.jsonl")
		write := func(b []byte) {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write(orig)
		if n, err := Verify(p); err != nil || n != len(ends) {
			t.Fatalf("the untouched log: Verify = %d, %v", n, err)
		}

		i := int(at) % (len(orig) + 1)
		alt := bytes.Clone(orig)
		switch op % 5 {
		case 0: // flip bits of one byte
			if i == len(orig) || len(data) == 0 || data[0] == 0 {
				return
			}
			alt[i] ^= data[0]
		case 1: // insert
			alt = append(alt[:i:i], append(bytes.Clone(data), orig[i:]...)...)
		case 2: // delete
			alt = append(alt[:i:i], orig[min(len(orig), i+len(data)):]...)
		case 3: // replace
			alt = append(alt[:i:i], append(bytes.Clone(data), orig[min(len(orig), i+len(data)):]...)...)
		case 4: // cut
			alt = alt[:i]
		}
		write(alt)
		n, err := Verify(p)
		if bytes.Equal(alt, orig) {
			if err != nil || n != len(ends) {
				t.Fatalf("an edit that changed nothing: Verify = %d, %v", n, err)
			}
			return
		}
		good := 0
		if n > 0 {
			good = ends[n-1]
		}
		if n > len(ends) || len(alt) < good || !bytes.Equal(alt[:good], orig[:good]) {
			t.Fatalf("Verify = %d, %v: the %d records it verified are not the original's\n%q", n, err, n, alt)
		}
		if err == nil {
			if len(alt) != good {
				t.Fatalf("an altered log verifies %d records and has more after them:\n%q", n, alt)
			}
			return
		}
		var be *BrokenError
		if !errors.As(err, &be) || be.Line != n+1 || be.Path != p {
			t.Fatalf("Verify = %d, %v; want a BrokenError at line %d", n, err, n+1)
		}
	})
}
