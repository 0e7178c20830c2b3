package suggest

import "testing"

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"help", "hello", 2}, {"pdf", "pfd", 2}, {"undo", "undo", 0}}
	for _, c := range cases {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
