package acpagent

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// mention is a file the user linked inside the root: "@rel" in the text, its content attached through the broker.
type mention struct {
	rel string
}

// promptText turns the editor's content blocks into Garuda's prompt text: text as is; a file:// link inside the
// root as @relative/path (listed in mentions, to attach); any other link as its name and URI; an embedded resource
// as a fenced block labelled with its URI.
func promptText(blocks []acp.ContentBlock, root string) (string, []mention) {
	var b strings.Builder
	var mentions []mention
	// sep keeps inline pieces apart without doubling the user's own spacing.
	sep := func() {
		if s := b.String(); s != "" && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\n") {
			b.WriteByte(' ')
		}
	}
	inline := false // the last piece was a link, an image or audio
	for _, blk := range blocks {
		after := inline
		inline = blk.ResourceLink != nil || blk.Image != nil || blk.Audio != nil
		switch {
		case blk.Text != nil:
			// A text block right after a link is apart from it, as the editor showed them: "@a.go" then "/b" is not
			// the path "@a.go/b". Punctuation stays attached ("@a.go, @b.go.").
			if t := blk.Text.Text; after && t != "" && !strings.ContainsAny(t[:1], " \t\r\n,.;:!?)]}'\"") {
				sep()
			}
			b.WriteString(blk.Text.Text)
			for _, rel := range textMentions(blk.Text.Text) {
				mentions = append(mentions, mention{rel: rel})
			}
		case blk.ResourceLink != nil:
			l := blk.ResourceLink
			sep()
			if rel, ok := inRoot(l.Uri, root); ok {
				b.WriteString("@" + rel)
				mentions = append(mentions, mention{rel: rel})
			} else {
				fmt.Fprintf(&b, "%s (%s)", l.Name, l.Uri)
			}
		case blk.Resource != nil:
			r := blk.Resource.Resource
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
			switch {
			case r.TextResourceContents != nil:
				fence := fenceFor(r.TextResourceContents.Text)
				text := strings.TrimSuffix(r.TextResourceContents.Text, "\n")
				fmt.Fprintf(&b, "%s%s\n%s\n%s\n", fence, r.TextResourceContents.Uri, text, fence)
			case r.BlobResourceContents != nil:
				fmt.Fprintf(&b, "(binary content of %s, not included)\n", r.BlobResourceContents.Uri)
			}
		case blk.Image != nil:
			sep()
			b.WriteString("(an image, not included: images are not supported in this version)")
		case blk.Audio != nil:
			sep()
			b.WriteString("(audio, not included: audio is not supported in this version)")
		}
	}
	return b.String(), mentions
}

// atPath finds "@path" typed in the prompt: at the start or after a space or bracket, so that an e-mail address is
// not one; a path has a "/" or a "." in it, so that "@Override" or "@team" is not one. Its letters and digits are
// any script's (\w is ASCII only: "@docs/Übersicht.md" was cut to "@docs/"). Compiled at the first prompt: the
// Unicode classes take some 80 µs, which initialize need not wait for.
var atPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s(\[])@((?:\.{0,2}/)?[\p{L}\p{M}\p{N}_.\-/+~]+)`)
})

// textMentions returns the paths the user typed as @path, once each.
func textMentions(text string) []string {
	if !strings.Contains(text, "@") {
		return nil // no mention: the regexp is not compiled (0.15 ms at the first prompt) or run
	}
	var out []string
	for _, m := range atPath().FindAllStringSubmatch(text, -1) {
		p := strings.TrimRight(m[1], ".,;:!?)")
		if p == "" || !strings.ContainsAny(p, "./") || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// fenceFor is a code fence longer than any run of backticks in text, so the block cannot be closed early.
func fenceFor(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// inRoot returns the path of a file:// URI relative to root, if it is inside it.
func inRoot(uri, root string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	p := u.Path
	if p == "" || !filepath.IsAbs(p) {
		return "", false
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// commandName returns the name of a prompt that starts with "/name" (a name without another "/").
func commandName(text string) (string, bool) {
	if !strings.HasPrefix(text, "/") {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(text, "/"), " ")
	name, _, _ = strings.Cut(name, "\n")
	if name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}
