package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseCommand parses a fuzzed command or skill file. Whatever it holds, the fields shown in the editor's menu
// and put into the system prompt are one line of visible text within MaxFieldLen characters, the hash is the
// file's, the body is the end of the text, and every problem names a line of the header in file order. A comment
// line added at the top of the header changes no field.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		"---\ndescription: Run the tests\n---\nb", "---\ndescription: \"say \\\"hi\\\" # not a comment\"\n---\nb",
		"---\ndescription: 'it''s here'\n---\nb", "---\nargument-hint: [pr-number] [priority]\n---\nb",
		"---\nallowed-tools:\n  - Read\n  - \"Bash(go test:*)\"\n---\nb", "---\nallowed-tools: [Read, 'Grep']\n---\nb",
		"---\ndescription: >\n  one\n  two\n\n  three\nmodel: m\n---\nb", "---\ndescription: |\n  one\n  two\n---\nb",
		"\uFEFF---\r\ndescription: win\r\n---\r\nb\r\n", "---\nmetadata:\n  author: x\n  version: \"1\"\ndescription: d\n---\nb",
		"---\ndescription: first\ndescription: second\n---\nb", "---\n  lost: x\ndescription: d\n---\nb",
		"---\nallowed-tools:\n  - a\n  b: c\n---\nb", "---\nname: my-skill\ndescription: d\u202e\u200bx\x07\n---\nbody",
		"---\ndescription: d\n", "Just a body\n---\nnot a header", "---\ndescription: \"a\n---\n", "\xff\xfe---\n",
		"", "---", "---\n---", "---\na: \"\n---", "---\na: [\n", "---\na: |\n  x\n---\n$ARGUMENTS $1",
		"---\n- x\n  - y\n: z\n---", "---\ndescription: '\n'\n---",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, skill bool) {
		c := parseCommand(data, "x", SourceProject, ".claude/commands/x.md", skill)
		for field, v := range map[string]string{"description": c.Description, "argument-hint": c.ArgumentHint,
			"model": c.Model, "allowed-tools": c.AllowedTools} {
			if !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxFieldLen || strings.TrimSpace(v) != v {
				t.Fatalf("%s %q: invalid UTF-8, too long or not trimmed", field, v)
			}
			for _, r := range v {
				if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
					t.Fatalf("%s %q holds %U", field, v, r)
				}
			}
		}
		_ = expand(c, string(data))
		if sum := sha256.Sum256(data); c.Hash != hex.EncodeToString(sum[:]) {
			t.Fatalf("hash %s is not the file's", c.Hash)
		}
		text := strings.ReplaceAll(strings.TrimPrefix(strings.ToValidUTF8(string(data), "\uFFFD"), "\uFEFF"), "\r\n", "\n")
		if !strings.Contains(text, c.Body) {
			t.Fatalf("body %q is not in the text", c.Body)
		}

		fm, body := splitFrontmatter(text)
		if !strings.HasSuffix(text, body) {
			t.Fatalf("body %q is not the end of the text", body)
		}
		header := strings.Count(text[:len(text)-len(body)], "\n") + 1
		last := 0
		for _, e := range fm.errs {
			n, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(e, ":", 2)[0], "line "))
			if err != nil || n < 1 || n > header || n < last {
				t.Fatalf("problem %q does not name a header line (1..%d) in order: %q", e, header, fm.errs)
			}
			last = n
		}
		if !fm.present {
			return
		}
		first, rest, _ := strings.Cut(text, "\n")
		fm2, body2 := splitFrontmatter(first + "\n# added\n" + rest)
		closed := body != text // an unclosed header leaves the whole text as the body
		if closed && body2 != body || !maps.EqualFunc(fm.fields, fm2.fields, func(a, b fmValue) bool { return reflect.DeepEqual(a, b) }) {
			t.Fatalf("a comment line changed the fields:\n%+v\n%+v", fm.fields, fm2.fields)
		}
		if len(fm2.errs) != len(fm.errs) {
			t.Fatalf("a comment line changed the problems: %q, %q", fm.errs, fm2.errs)
		}
		for i, e := range fm.errs {
			var n int
			fmt.Sscanf(e, "line %d:", &n)
			if n > 1 && !strings.HasPrefix(fm2.errs[i], fmt.Sprintf("line %d:", n+1)) {
				t.Fatalf("problem %q became %q, want line %d", e, fm2.errs[i], n+1)
			}
		}
	})
}
