package mcphost

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// cutAll runs in through a cutReader with the given limits, saving cut texts in dir; oneByte reads it a byte at a
// time (every boundary of every escape is crossed).
func cutAll(t testing.TB, in string, limit, keep int, dir string, oneByte bool) string {
	t.Helper()
	var r io.Reader = strings.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	var save func() (*os.File, error)
	if dir != "" {
		save = func() (*os.File, error) { return os.CreateTemp(dir, "cut-*.txt") }
	}
	c := newCutReader(r, save)
	c.limit, c.keep = limit, keep
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Messages without a long text pass byte for byte, long strings of other keys included.
func TestCutReaderPassesSmallMessages(t *testing.T) {
	long := strings.Repeat("z", 100)
	in := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"short \"q\" \\ \u00e9"}],"other":"` + long + `"}}` +
		"\n" + `{"text": ["` + long + `"], "x": {"text":"` + strings.Repeat("y", 20) + `"}}` + "\n" + "garbage \" line\n" +
		`{"text":"after garbage"}` + "\n"
	for _, oneByte := range []bool{false, true} {
		if out := cutAll(t, in, 50, 10, "", oneByte); out != in {
			t.Errorf("changed (one byte %v):\n%s\n%s", oneByte, in, out)
		}
	}
}

// A long text is cut to head and tail around a note, the whole saved decoded; escapes of every kind (surrogate
// pairs, a lone surrogate, escapes across the cut) are decoded; a long data is dropped; the message stays valid.
func TestCutReaderCutsLongText(t *testing.T) {
	text := "HEAD\"\\/\b\f\n\r\t\u00e9\u20ac😀" + strings.Repeat("0123456789", 50) + "é😀\"TAIL"
	enc, _ := json.Marshal(text)
	// Escape what json.Marshal leaves as it is, and a pair of surrogates, so that the decoder meets them all.
	raw := strings.ReplaceAll(string(enc[1:len(enc)-1]), "😀", `\ud83d\ude00`)
	raw = strings.Replace(raw, "/", `\/`, 1)
	in := `{"result":{"content":[{"type":"text","text":"` + raw + `"},{"type":"image","mimeType":"image/png","data":"` +
		strings.Repeat("QUFB", 200) + `"}],"isError":false}}` + "\n" + `{"next":true}` + "\n"
	for _, oneByte := range []bool{false, true} {
		dir := t.TempDir()
		out := cutAll(t, in, 100, 20, dir, oneByte)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 || lines[1] != `{"next":true}` {
			t.Fatalf("lines: %q", lines)
		}
		var msg struct {
			Result struct {
				Content []struct{ Text, Data string }
			}
		}
		if err := json.Unmarshal([]byte(lines[0]), &msg); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, lines[0])
		}
		got := msg.Result.Content[0].Text
		files, _ := filepath.Glob(filepath.Join(dir, "cut-*.txt"))
		if len(files) != 1 {
			t.Fatalf("saved: %v", files)
		}
		whole, _ := os.ReadFile(files[0])
		if string(whole) != text {
			t.Errorf("saved %q, want %q", whole, text)
		}
		head, tail := []byte(text)[:20], []byte(text)[len(text)-20:]
		want := strings.ToValidUTF8(string(head), "") + "\n[... " + itoa(len(text)-40) + " bytes cut; the whole result is in " + files[0] +
			" ...]\n" + strings.ToValidUTF8(string(tail), "")
		if got != want {
			t.Errorf("one byte %v: got %q, want %q", oneByte, got, want)
		}
		if msg.Result.Content[1].Data != "" {
			t.Errorf("the long data stayed: %d bytes", len(msg.Result.Content[1].Data))
		}
	}
	// A lone surrogate and a bad escape are U+FFFD.
	dir := t.TempDir()
	cutAll(t, `{"text":"\ud83dx\q`+strings.Repeat("a", 200)+`"}`, 100, 20, dir, false)
	files, _ := filepath.Glob(filepath.Join(dir, "cut-*.txt"))
	if whole, _ := os.ReadFile(files[0]); !strings.HasPrefix(string(whole), "\uFFFDx\uFFFDaaa") {
		t.Errorf("saved %q", whole)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The reader's memory is bounded by its limits, however long the string: 50 MB of text costs a few MiB at most.
func TestCutReaderMemoryIsBounded(t *testing.T) {
	const size = 50 << 20
	src := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`),
		&repeatReader{b: 'x', n: size}, strings.NewReader(`"}]}}`+"\n"))
	c := newCutReader(src, nil)
	var before, after runtimeMem
	before.read()
	out, err := io.ReadAll(c)
	after.read()
	if err != nil || len(out) > 2*keepText+200 || !bytes.Contains(out, []byte("bytes cut")) {
		t.Fatalf("%d bytes out, %v", len(out), err)
	}
	if grown := after.total - before.total; grown > 8<<20 {
		t.Errorf("cutting 50 MiB allocated %d MiB", grown>>20)
	}
}

// repeatReader reads n copies of b.
type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = r.b
	}
	r.n -= n
	return n, nil
}

// FuzzCutReader: whatever a server sends, valid JSON stays valid JSON, and what has no long string passes as it is.
func FuzzCutReader(f *testing.F) {
	for _, s := range []string{`{"text":"abc"}`, `{"a":[{"text":"` + strings.Repeat("\\u00e9x", 30) + `"}]}`,
		`{"data":"` + strings.Repeat("QQ", 60) + `","text":"\ud83d\ude00` + strings.Repeat("y", 90) + `"}`, `[1,"text",{"text":2}]`,
		"{\"text\":\"a\nb\"}\n{\"text\":\"" + strings.Repeat("\\\"", 80) + "\"}", `"\`, `{"text":"\u12`} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, in string, oneByte bool) {
		out := cutAll(t, in, 64, 8, "", oneByte)
		if json.Valid([]byte(in)) {
			var a, b any
			if json.Unmarshal([]byte(out), &b) != nil {
				t.Fatalf("valid JSON became invalid:\n%q\n%q", in, out)
			}
			// Apart from the values of text, data and blob keys, it means the same.
			json.Unmarshal([]byte(in), &a)
			if !reflect.DeepEqual(blank(a), blank(b)) {
				t.Fatalf("the meaning changed:\n%q\n%q", in, out)
			}
		}
		if len(in) <= 64 && out != in {
			t.Fatalf("a short input changed:\n%q\n%q", in, out)
		}
		if len(out) > len(in)+200*(strings.Count(in, `"`)+1) {
			t.Fatalf("the output grew: %d → %d", len(in), len(out))
		}
	})
}

// runtimeMem is the bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}

// blank is v with the string values of text, data and blob keys made "".
func blank(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if _, ok := x.(string); ok && (k == "text" || k == "data" || k == "blob") {
				v[k] = ""
			} else {
				v[k] = blank(x)
			}
		}
	case []any:
		for i := range v {
			v[i] = blank(v[i])
		}
	}
	return v
}

// BenchmarkCutReader50MB is the broker's cost of reading a 50 MB text result: cut to head and tail, the whole
// decoded into a file.
func BenchmarkCutReader50MB(b *testing.B) {
	dir := b.TempDir()
	const size = 50 << 20
	b.SetBytes(size)
	for b.Loop() {
		src := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`),
			&repeatReader{b: 'x', n: size}, strings.NewReader(`"}]}}`+"\n"))
		c := newCutReader(src, func() (*os.File, error) { return os.CreateTemp(dir, "cut-*.txt") })
		if _, err := io.Copy(io.Discard, c); err != nil {
			b.Fatal(err)
		}
	}
}
