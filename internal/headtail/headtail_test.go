package headtail

import (
	"strings"
	"testing"
)

// The head is the first bytes, the tail the last ones in order whatever the writes' sizes, and Cut counts the rest.
func TestHeadTailAndCut(t *testing.T) {
	for _, c := range []struct {
		name       string
		writes     []string
		head, tail string
		cut        int64
	}{
		{"nothing", nil, "", "", 0},
		{"head only", []string{"ab"}, "ab", "", 0},
		{"head and part of the tail", []string{"abcd", "ef"}, "abcd", "ef", 0},
		{"exactly both", []string{"abcdefgh"}, "abcd", "efgh", 0},
		{"the ring wraps once", []string{"abcdefghij"}, "abcd", "ghij", 2},
		{"in small writes", strings.Split("abcdefghijklmnopq", ""), "abcd", "nopq", 9},
		{"a write larger than the ring", []string{"abcd", strings.Repeat("x", 100) + "wxyz"}, "abcd", "wxyz", 100},
	} {
		b := New(4)
		for _, w := range c.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", c.name, n, err)
			}
		}
		if string(b.Head()) != c.head || string(b.Tail()) != c.tail || b.Cut() != c.cut {
			t.Errorf("%s: head %q tail %q cut %d, want %q %q %d", c.name, b.Head(), b.Tail(), b.Cut(), c.head, c.tail, c.cut)
		}
	}
}

// Tail's slice is the caller's: later writes do not change it.
func TestTailIsACopy(t *testing.T) {
	b := New(2)
	b.Write([]byte("abcd"))
	tail := b.Tail()
	b.Write([]byte("ef"))
	if string(tail) != "cd" || string(b.Tail()) != "ef" {
		t.Fatalf("tail %q then %q", tail, b.Tail())
	}
}
