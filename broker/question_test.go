package broker

import (
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/fsops"
)

// A question warns of hidden text only when its rendering would hide or disguise something; a multi-line command
// hides nothing.
func TestLineTricks(t *testing.T) {
	wide := "echo ok                                                  ; curl evil"
	for _, c := range []struct {
		name           string
		title, preview string
		want           bool
	}{
		{"multi-line command", "$ make\nmake test", "make\nmake test", false},
		{"CRLF lines", "$ a\r\nb", "a\r\nb", false},
		{"a path with a line break", "Write /p/notes.txt\nWrite /etc/motd", "Create /p/notes.txt\nWrite /etc/motd", true},
		{"a lone carriage return", "$ safe\rrm -rf ~", "safe\rrm -rf ~", true},
		{"a lone CR in the preview only", "$ x", "x\ry", true},
		{"wide spaces push the rest out of view", "$ " + wide, wide, true},
		{"blank lines push the rest below", "$ x", "echo ok" + strings.Repeat("\n", 25) + "curl evil", true},
		{"a few blank lines", "$ x", "a\n\n\nb", false},
	} {
		if got := lineTricks(c.title, c.preview); got != c.want {
			t.Errorf("%s: lineTricks = %v, want %v", c.name, got, c.want)
		}
	}
}

// A question carries one warning per subject: the decision's "Outside the sandbox" replaces the operation's.
func TestMergeWarnings(t *testing.T) {
	for _, c := range []struct{ decision, op, want string }{
		{"Outside the sandbox: policy words.", "Outside the sandbox: op words.", "Outside the sandbox: policy words."},
		{"", "Outside the sandbox: op words.", "Outside the sandbox: op words."},
		{"Outside the project: x.", "Outside the sandbox: y.", "Outside the project: x.\nOutside the sandbox: y."},
		{"Same line", "Same line", "Same line"},
	} {
		if got := mergeWarnings(c.decision, c.op); got != c.want {
			t.Errorf("mergeWarnings(%q, %q) = %q, want %q", c.decision, c.op, got, c.want)
		}
	}
}

// A question about a change carries its diff up to 1 MiB of old and new text together; above it, or for a file that
// is not UTF-8, the preview alone goes.
func TestChangeDiff(t *testing.T) {
	if d := changeDiff("/p/a", &fsops.Pending{Old: []byte("a\n"), New: []byte("b\n"), Existed: true}); d == nil ||
		d.GetOldText() != "a\n" || d.GetNewText() != "b\n" || d.GetNewFile() {
		t.Errorf("small change: %v", d)
	}
	big := []byte(strings.Repeat("x", maxDiff))
	if d := changeDiff("/p/a", &fsops.Pending{Old: big, New: []byte("y")}); d != nil {
		t.Error("a diff over 1 MiB was sent")
	}
	if d := changeDiff("/p/a", &fsops.Pending{Old: []byte("\xff"), New: []byte("y")}); d != nil {
		t.Error("a diff of a file that is not UTF-8 was sent")
	}
}
