package webfetch

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkConvert1MB turns a 1 MB HTML page (headings, paragraphs with links, lists, a table, code) into Markdown.
func BenchmarkConvert1MB(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("<html><head><title>Bench</title><style>p{}</style></head><body>")
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, `<h2>Section %d</h2><p>Some <b>bold</b> and <i>italic</i> text with <a href="/p/%d">a link</a> `+
			`and <code>code()</code>.</p><ul><li>one</li><li>two</li></ul><table><tr><th>a</th><th>b</th></tr>`+
			`<tr><td>%d</td><td>x</td></tr></table><pre><code>func f() {}</code></pre>`, i, i, i)
	}
	sb.WriteString("</body></html>")
	page, _ := url.Parse("https://example.com/docs/")
	html := sb.String()
	markdown() // made at first use; not part of the figure
	b.SetBytes(int64(len(html)))
	for b.Loop() {
		if _, err := toMarkdown(context.Background(), html, page); err != nil {
			b.Fatal(err)
		}
	}
}
