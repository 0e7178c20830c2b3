package fsops

import "testing"

func TestHasHidden(t *testing.T) {
	cases := map[string]bool{
		"plain text\n\tindented\r\n": false,
		"café, 東京, emoji 🙂":          false,
		"a\u202eb":                   true, // right-to-left override
		"x\u2066y\u2069":             true, // isolates
		"zero\u200bwidth":            true,
		"esc\x1b[31m":                true,
		"bad \xff utf8":              true,
		"tag\U000E0041":              true,
		"bell\a":                     true,
	}
	for s, want := range cases {
		if got := HasHidden([]byte(s)); got != want {
			t.Errorf("HasHidden(%q) = %v, want %v", s, got, want)
		}
	}
}
