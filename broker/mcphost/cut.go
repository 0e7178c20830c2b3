package mcphost

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/internal/headtail"
)

// A server's messages are cut while they are read, before the SDK decodes them: a string value of a "text" key
// (a tool's text result, a resource's text, a prompt's message) longer than maxText keeps its first and last
// keepText bytes around a note, and is saved whole to a file; one of a "data" or "blob" key (base64 of an image,
// audio or a binary resource, which the model is not given) longer than maxText is dropped (""). Everything else
// passes byte for byte. Defends the broker's memory against a large result, which it never holds whole: a 50 MB
// result reaches the model as head and tail, and the message the SDK decodes stays under MaxMessage.
const (
	maxText  = 1 << 20
	keepText = 14000
)

// maxDepth bounds the nesting the reader follows; deeper, it passes everything on (the SDK refuses such messages).
const maxDepth = 10000

// cutReader is the cutting reader of one stream of messages: newline-delimited JSON (stdio), a JSON body or an
// event stream (HTTP). Its memory is bounded: a string it watches is held up to maxText bytes, then only its head
// and tail.
type cutReader struct {
	r           io.Reader
	save        func() (*os.File, error) // where a cut text is saved whole; nil: not saved
	limit, keep int                      // maxText and keepText (smaller in tests)
	buf         []byte
	out         []byte // what is to be read
	obuf        []byte // out's whole buffer
	err         error

	// The structure around the bytes read.
	stack   []byte // '{' and '[' of the open values
	deep    int    // open values past maxDepth
	wantKey bool   // the next string in the object is a key
	inStr   bool   // in a string (a key, or a value not watched)
	esc     bool   // the byte before was a backslash, in a string
	isKey   bool
	key     []byte // the key being read, its first bytes
	valueOf byte   // the kind of the key just read, until its value starts: 't' (text), 'd' (data, blob) or 0

	// A watched string: a value of a "text", "data" or "blob" key.
	watch byte   // 't', 'd' or 0
	raw   []byte // its bytes so far, while under maxText
	cut   *cutText
}

func newCutReader(r io.Reader, save func() (*os.File, error)) *cutReader {
	return &cutReader{r: r, save: save, limit: maxText, keep: keepText, buf: make([]byte, 32<<10)}
}

func (c *cutReader) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		if cap(c.obuf) > 1<<20 {
			c.obuf = nil // what a large string left is let go of
		}
		c.out = c.obuf[:0]
		n, err := c.r.Read(c.buf)
		c.process(c.buf[:n])
		if err != nil {
			c.flush() // what a stream that ended in a string had: the SDK then fails on it
			c.err = err
		}
		c.obuf = c.out
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// Close closes the stream read, when it is a Closer (an HTTP body).
func (c *cutReader) Close() error {
	if rc, ok := c.r.(io.Closer); ok {
		return rc.Close()
	}
	return nil
}

func (c *cutReader) process(b []byte) {
	for len(b) > 0 {
		switch {
		case c.watch != 0:
			b = c.watched(b)
		case c.inStr:
			b = c.str(b)
		default:
			b = c.structure(b)
		}
	}
}

// structure passes bytes outside strings on, following the objects and arrays, up to the start of a string.
func (c *cutReader) structure(b []byte) []byte {
	for i, ch := range b {
		switch ch {
		case '"':
			c.out = append(c.out, b[:i+1]...)
			c.startString()
			return b[i+1:]
		case '{', '[':
			if len(c.stack) < maxDepth {
				c.stack = append(c.stack, ch)
			} else {
				c.deep++
			}
			c.wantKey, c.valueOf = ch == '{', 0
		case '}', ']':
			if c.deep > 0 {
				c.deep--
			} else if len(c.stack) > 0 {
				c.stack = c.stack[:len(c.stack)-1]
			}
			c.wantKey, c.valueOf = false, 0
		case ',':
			c.wantKey, c.valueOf = c.inObject(), 0
		case ':':
			c.wantKey = false
		case ' ', '\t', '\r', '\n':
		default:
			c.valueOf = 0
		}
	}
	c.out = append(c.out, b...)
	return nil
}

func (c *cutReader) inObject() bool {
	return c.deep == 0 && len(c.stack) > 0 && c.stack[len(c.stack)-1] == '{'
}

func (c *cutReader) startString() {
	switch {
	case c.wantKey && c.inObject():
		c.inStr, c.isKey, c.key, c.wantKey = true, true, c.key[:0], false
	case c.valueOf != 0 && c.inObject():
		c.watch, c.raw = c.valueOf, c.raw[:0]
	default:
		c.inStr, c.isKey = true, false
	}
	c.valueOf = 0
}

// endOfString finds the end of the string b is in: the index of its closing quote, or of a line break (not valid
// JSON: the line ends there), or -1. esc carries a backslash at the end of b over to the next bytes.
func endOfString(b []byte, esc *bool) int {
	i := 0
	if *esc && len(b) > 0 {
		*esc, i = false, 1
	}
	for i < len(b) {
		j := bytes.IndexAny(b[i:], "\"\\\n")
		if j < 0 {
			return -1
		}
		i += j
		if b[i] != '\\' {
			return i
		}
		if i+1 == len(b) {
			*esc = true
			return -1
		}
		i += 2
	}
	return -1
}

// str passes a key or a value not watched on, up to its end.
func (c *cutReader) str(b []byte) []byte {
	end := endOfString(b, &c.esc)
	if end < 0 {
		c.out = append(c.out, b...)
		if c.isKey && len(c.key) < 8 {
			c.key = append(c.key, b[:min(len(b), 8-len(c.key))]...)
		}
		return nil
	}
	c.out = append(c.out, b[:end+1]...)
	if b[end] == '\n' {
		c.reset()
		return b[end+1:]
	}
	if c.isKey {
		c.key = append(c.key, b[:min(end, max(0, 8-len(c.key)))]...)
		switch string(c.key) {
		case "text":
			c.valueOf = 't'
		case "data", "blob":
			c.valueOf = 'd'
		}
	}
	c.inStr, c.isKey = false, false
	return b[end+1:]
}

// reset forgets the structure at a line break inside a string: the line was not JSON.
func (c *cutReader) reset() {
	c.stack, c.deep, c.wantKey, c.inStr, c.esc, c.isKey, c.valueOf, c.watch = c.stack[:0], 0, false, false, false, false, 0, 0
}

// watched reads a watched string: held while under maxText, then cut.
func (c *cutReader) watched(b []byte) []byte {
	if c.cut != nil {
		end := c.cut.feed(b)
		if end < 0 {
			return nil
		}
		c.finishCut()
		if b[end] == '\n' {
			c.out = append(c.out, '\n')
			c.reset()
		}
		return b[end+1:]
	}
	end := endOfString(b, &c.esc)
	n := len(b)
	if end >= 0 {
		n = end
	}
	if len(c.raw)+n > c.limit {
		// Past maxText: the string is cut. Its bytes held are decoded first, then these (the cutter follows the
		// escapes itself, an escape begun at the end of those held included).
		c.cut = newCutText(c.watch == 't', c.keep, c.save)
		c.esc = false
		c.cut.feed(c.raw)
		c.raw = c.raw[:0]
		return c.watched(b)
	}
	if end < 0 {
		c.raw = append(c.raw, b...)
		return nil
	}
	c.out = append(append(c.out, c.raw...), b[:end+1]...)
	c.raw = c.raw[:0]
	if b[end] == '\n' {
		c.reset()
	} else {
		c.watch = 0
	}
	return b[end+1:]
}

// finishCut writes the cut string's kept text and its closing quote.
func (c *cutReader) finishCut() {
	s := c.cut.finish()
	if s != "" {
		q, _ := json.Marshal(s)
		c.out = append(c.out, q[1:len(q)-1]...)
	}
	c.out = append(c.out, '"')
	c.cut, c.watch = nil, 0
}

// flush passes on what a watched string held when the stream ended.
func (c *cutReader) flush() {
	switch {
	case c.cut != nil:
		c.finishCut()
	case c.watch != 0:
		c.out = append(c.out, c.raw...)
		c.raw = c.raw[:0]
	}
}

// cutText decodes a cut string (its JSON escapes) into its head, the ring of its tail and the file it is saved to.
type cutText struct {
	text bool // a text: kept as head and tail; else dropped
	one  [1]byte
	esc  int  // 0, after a backslash (1), in \u's hex digits (2)
	hex  rune // the \u's digits so far
	nhex int
	high rune // a high surrogate waiting for its low half

	kept *headtail.Buffer // a text's head and tail
	file *os.File
	w    *bufio.Writer
	werr error
}

func newCutText(text bool, keep int, save func() (*os.File, error)) *cutText {
	t := &cutText{text: text}
	if !text {
		return t
	}
	t.kept = headtail.New(keep)
	if save != nil {
		if f, err := save(); err == nil {
			t.file, t.w = f, bufio.NewWriterSize(f, 64<<10)
		}
	}
	return t
}

// feed decodes raw string bytes up to the closing quote (or a line break) and returns its index, or -1.
func (t *cutText) feed(b []byte) int {
	i := 0
	for i < len(b) {
		switch t.esc {
		case 0:
			j := bytes.IndexAny(b[i:], "\"\\\n")
			if j < 0 {
				t.emit(b[i:])
				return -1
			}
			t.emit(b[i : i+j])
			i += j
			if b[i] != '\\' {
				t.flushHigh()
				return i
			}
			t.esc, i = 1, i+1
		case 1:
			ch := b[i]
			i++
			if ch == 'u' {
				t.esc, t.hex, t.nhex = 2, 0, 0
				continue
			}
			t.esc = 0
			t.flushHigh()
			switch ch {
			case 'n':
				t.byte('\n')
			case 't':
				t.byte('\t')
			case 'r':
				t.byte('\r')
			case 'b':
				t.byte('\b')
			case 'f':
				t.byte('\f')
			case '/', '\\', '"':
				t.byte(ch)
			default:
				t.addRune(utf8.RuneError)
			}
		case 2:
			d := unhex(b[i])
			i++
			if d < 0 {
				t.esc = 0
				t.flushHigh()
				t.addRune(utf8.RuneError)
				continue
			}
			t.hex, t.nhex = t.hex<<4|rune(d), t.nhex+1
			if t.nhex == 4 {
				t.esc = 0
				t.unicode(t.hex)
			}
		}
	}
	return -1
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unicode takes one \uXXXX: surrogate halves are joined, a lone one is U+FFFD.
func (t *cutText) unicode(r rune) {
	if t.high != 0 {
		high := t.high
		t.high = 0
		if r >= 0xDC00 && r < 0xE000 {
			t.addRune(utf16.DecodeRune(high, r))
			return
		}
		t.addRune(utf8.RuneError)
	}
	switch {
	case r >= 0xD800 && r < 0xDC00:
		t.high = r
	case r >= 0xDC00 && r < 0xE000:
		t.addRune(utf8.RuneError)
	default:
		t.addRune(r)
	}
}

// flushHigh ends a high surrogate that no low half followed: U+FFFD.
func (t *cutText) flushHigh() {
	if t.high != 0 {
		t.high = 0
		t.addRune(utf8.RuneError)
	}
}

func (t *cutText) emit(p []byte) {
	if len(p) > 0 {
		t.flushHigh()
		t.add(p)
	}
}

func (t *cutText) byte(c byte) {
	t.one[0] = c
	t.add(t.one[:])
}

func (t *cutText) addRune(r rune) {
	var b [utf8.UTFMax]byte
	t.add(b[:utf8.EncodeRune(b[:], r)])
}

// add takes decoded bytes: counted, saved, and kept as head and tail.
func (t *cutText) add(p []byte) {
	if !t.text {
		return
	}
	if t.w != nil && t.werr == nil {
		_, t.werr = t.w.Write(p)
	}
	t.kept.Write(p)
}

// finish closes the saved file and returns what stays of the string: "" for dropped data, else head, a note of
// what was cut and where the whole is, and tail.
func (t *cutText) finish() string {
	if !t.text {
		return ""
	}
	where := ""
	if t.file != nil {
		if t.werr == nil {
			t.werr = t.w.Flush()
		}
		if err := t.file.Close(); t.werr == nil {
			t.werr = err
		}
		if t.werr == nil {
			where = "; the whole result is in " + t.file.Name()
		} else {
			os.Remove(t.file.Name())
		}
	}
	// The cuts fall anywhere in a character: the broken halves are left out.
	head, tail := strings.ToValidUTF8(string(t.kept.Head()), ""), strings.ToValidUTF8(string(t.kept.Tail()), "")
	return fmt.Sprintf("%s\n[... %d bytes cut%s ...]\n%s", head, t.kept.Cut(), where, tail)
}
