package broker

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/broker/fsops"
)

// maxPreview caps the preview text of a change.
const maxPreview = 64 << 10

// changePreview is the text a question shows for a write or an edit: a unified diff of the one region that
// changes (the common head and tail of the file are trimmed), with three lines of context.
func changePreview(abs string, p *fsops.Pending) string {
	var b strings.Builder
	if !p.Existed {
		fmt.Fprintf(&b, "Create %s (%d bytes)\n", abs, len(p.New))
	} else {
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", abs, abs)
	}
	old, nw := splitLines(p.Old), splitLines(p.New)
	head := 0
	for head < len(old) && head < len(nw) && old[head] == nw[head] {
		head++
	}
	tail := 0
	for tail < len(old)-head && tail < len(nw)-head && old[len(old)-1-tail] == nw[len(nw)-1-tail] {
		tail++
	}
	const ctx = 3
	from := max(head-ctx, 0)
	oldEnd, newEnd := len(old)-tail, len(nw)-tail
	toOld, toNew := min(oldEnd+ctx, len(old)), min(newEnd+ctx, len(nw))
	fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", from+1, toOld-from, from+1, toNew-from)
	for _, l := range old[from:head] {
		b.WriteString(" " + l + "\n")
	}
	for _, l := range old[head:oldEnd] {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range nw[head:newEnd] {
		b.WriteString("+" + l + "\n")
	}
	for _, l := range old[oldEnd:toOld] {
		b.WriteString(" " + l + "\n")
	}
	s := b.String()
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD") + "\n(the text has bytes that are not UTF-8, shown as \uFFFD; they are written as they are)"
	}
	if len(s) > maxPreview {
		s = s[:maxPreview] + fmt.Sprintf("\n[... preview cut at %d bytes of %d ...]", maxPreview, len(s))
	}
	return s
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// firstChangedLine is the 1-based line where new first differs from old.
func firstChangedLine(old, nw []byte) int {
	n := min(len(old), len(nw))
	i := 0
	for i < n && old[i] == nw[i] {
		i++
	}
	return bytes.Count(nw[:i], []byte("\n")) + 1
}
