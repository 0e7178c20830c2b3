package webfetch

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzToMarkdown feeds the HTML converter what a hostile page may hold: it never panics, keeps valid UTF-8 valid,
// and its output stays within a small multiple of the page (each link and image gains at most the page's address).
func FuzzToMarkdown(f *testing.F) {
	for _, s := range []string{
		`<html><head><title>t</title><script>alert(1)</script></head><body><h1>Hi</h1><p>a <a href="/x">link</a></p></body></html>`,
		`<table><tr><td>1</td><td><table><tr><td>2</td></tr></table></td></tr></table>`,
		`<ul><li><ol><li><ul><li>deep</li></ul></li></ol></li></ul><pre><code>x := 1</code></pre>`,
		`<a href="javascript:alert(1)">x</a><img src="data:image/png;base64,AAAA"><a href="//evil/">y</a>`,
		strings.Repeat("<div>", 500) + "x",
		"<p>\u202eevil\u202c \u200b</p>",
	} {
		f.Add(s)
	}
	page, _ := url.Parse("https://example.com/docs/page.html")
	f.Fuzz(func(t *testing.T, html string) {
		if len(html) > 64<<10 {
			return
		}
		md, err := toMarkdown(context.Background(), html, page)
		if err != nil {
			return
		}
		if utf8.ValidString(html) && !utf8.ValidString(md) {
			t.Fatalf("valid UTF-8 became invalid: %q", md)
		}
		if grown := len(md) - len(html); grown > 0 && grown > 8*len(html)+(strings.Count(html, "<")+1)*len(page.String())*2 {
			t.Fatalf("%d bytes of HTML became %d of Markdown", len(html), len(md))
		}
	})
}
