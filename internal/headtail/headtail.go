// Package headtail keeps the first and the last bytes of output of any size in bounded memory: a command's output
// (broker/sandbox) and an MCP server's long text (broker/mcphost) are shown as their head, a note of what was cut,
// and their tail.
package headtail

// Buffer keeps the first keep bytes written to it and a ring of the last keep bytes after them, and counts them all.
// Bounding memory defends the broker against a command or a server that prints gigabytes.
type Buffer struct {
	keep  int
	head  []byte
	tail  []byte // a ring of keep bytes
	pos   int    // where the ring's next byte goes
	full  bool   // the ring has wrapped: its oldest byte is at pos
	total int64
}

// New returns a Buffer that keeps up to keep bytes of head and keep bytes of tail.
func New(keep int) *Buffer {
	return &Buffer{keep: keep, tail: make([]byte, keep)}
}

// Write keeps what p adds to the head and the tail. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if h := min(b.keep-len(b.head), len(p)); h > 0 {
		b.head = append(b.head, p[:h]...)
		p = p[h:]
	}
	for len(p) > 0 && b.keep > 0 {
		c := copy(b.tail[b.pos:], p)
		p = p[c:]
		b.pos += c
		if b.pos == b.keep {
			b.pos, b.full = 0, true
		}
	}
	return n, nil
}

// Head returns the first bytes written (up to keep). The caller must not change them.
func (b *Buffer) Head() []byte { return b.head }

// Tail returns the last bytes written after the head (up to keep), in order, in a slice of its own.
func (b *Buffer) Tail() []byte {
	if b.full {
		return append(append([]byte(nil), b.tail[b.pos:]...), b.tail[:b.pos]...)
	}
	return append([]byte(nil), b.tail[:b.pos]...)
}

// Cut returns how many of the bytes written are in neither the head nor the tail.
func (b *Buffer) Cut() int64 {
	kept := len(b.head) + b.pos
	if b.full {
		kept = len(b.head) + b.keep
	}
	return b.total - int64(kept)
}
