package main

import "testing"

// The first sessions of a soak are replaced after lengths spread evenly up to replaceAfter, so that the sessions'
// lengths are spread from the start, as they stay once each has been replaced once.
func TestSoakFirstLivesAreSpread(t *testing.T) {
	for _, c := range []soakConfig{{sessions: 20, replaceAfter: 200}, {sessions: 3, replaceAfter: 7}, {sessions: 50, replaceAfter: 10}} {
		prev := 0
		for i := range c.sessions {
			l := c.firstLife(i)
			if l < 1 || l > c.replaceAfter || l < prev {
				t.Fatalf("%+v: session %d's first life %d (the one before %d): want 1..%d, not decreasing", c, i, l, prev,
					c.replaceAfter)
			}
			prev = l
		}
		if prev != c.replaceAfter {
			t.Errorf("%+v: the last session's first life is %d, want %d", c, prev, c.replaceAfter)
		}
		if first, want := c.firstLife(0), max(c.replaceAfter/c.sessions, 1); first != want {
			t.Errorf("%+v: the first session's first life is %d, want %d", c, first, want)
		}
	}
}
