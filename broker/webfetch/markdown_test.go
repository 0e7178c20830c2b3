package webfetch

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func convert(t *testing.T, html string) string {
	t.Helper()
	page, _ := url.Parse("https://example.com/docs/page.html")
	md, err := toMarkdown(context.Background(), html, page)
	if err != nil {
		t.Fatalf("%q: %v", html, err)
	}
	return md
}

// What a page's reader sees becomes Markdown: headings, emphasis, links and images made absolute, lists, code
// fenced with its language, quotes and tables; the page's title heads it, once.
func TestToMarkdown(t *testing.T) {
	for _, c := range []struct{ name, html, want string }{
		{"headings", `<h1>Top</h1><h3>Third</h3>`, "# Top\n\n### Third"},
		{"emphasis", `<p>a <b>bold</b> and <em>it</em>.</p>`, "a **bold** and *it*."},
		{"links", `<p><a href="/x">rel</a> <a href="#s">frag</a></p>`,
			"[rel](https://example.com/x) [frag](https://example.com/docs/page.html#s)"},
		{"images", `<p><img src="i.png" alt="An image"></p>`, "![An image](https://example.com/docs/i.png)"},
		{"lists", `<ul><li>one</li><li>two<ul><li>deep</li></ul></li></ul>`, "- one\n- two\n  \n  - deep"},
		{"code", "<pre><code class=\"language-go\">func f() {}\n</code></pre>", "```go\nfunc f() {}\n```"},
		{"quote", `<blockquote><p>said</p></blockquote><p>after</p>`, "> said\n\nafter"},
		{"table", `<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>`,
			"| a | b |\n|---|---|\n| 1 | 2 |"},
		{"title", `<title> The  Page </title><p>x</p>`, "# The Page\n\nx"},
		{"title said by the first heading", `<title>Same</title><h1>Same</h1><p>x</p>`, "# Same\n\nx"},
	} {
		if got := convert(t, c.html); got != c.want {
			t.Errorf("%s:\n%s\n--- got:\n%q\n--- want:\n%q", c.name, c.html, got, c.want)
		}
	}
}

// markers are texts of a page that no reader sees: none reaches the Markdown.
var markers = []string{"META", "LINK", "STYLE", "SCRIPT", "JSONLD", "SVGTITLE", "SVGTEXT", "INNERSVG", "NOSCRIPT",
	"TEMPLATE", "IFRAME", "INPUT", "TEXTAREA", "OPTION", "COMMENT", "MATH", "CANVAS", "OBJECT", "VIDEO", "BUTTON"}

const unseenPage = `<!DOCTYPE html><html><head><title>The Title</title><meta name="x" content="META">` +
	`<link rel="stylesheet" href="LINK"><style>p { color: STYLE }</style><script>var SCRIPT = 1;</script></head><body>` +
	`<p>visible</p><script type="application/ld+json">{"JSONLD": 1}</script>` +
	`<svg viewBox="0 0 1 1"><title>SVGTITLE</title><text>SVGTEXT</text><svg><desc>INNERSVG</desc></svg></svg>` +
	`<noscript><p>NOSCRIPT</p></noscript><template><p>TEMPLATE</p></template><iframe src="/f">IFRAME</iframe>` +
	`<form><input value="INPUT"><textarea>TEXTAREA</textarea><select><option>OPTION</option></select>` +
	`<button>BUTTON</button></form><!-- COMMENT --><math><mi>MATH</mi></math><canvas>CANVAS</canvas>` +
	`<object data="x">OBJECT</object><video>VIDEO</video><p>end</p></body></html>`

// What never becomes text a reader sees is taken out before the conversion: scripts, styles, SVG (its title and
// text too), noscript, templates, frames, the head but its title, form fields, comments, media. The control: the
// converter alone writes some of it.
func TestToMarkdownLeavesOut(t *testing.T) {
	if got := convert(t, unseenPage); got != "# The Title\n\nvisible\n\nend" {
		t.Errorf("got:\n%s", got)
	}
	raw, err := markdown().ConvertString(unseenPage)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw, "SVGTITLE") || !strings.Contains(raw, "OPTION") {
		t.Errorf("control: the converter alone left out what pruning takes out: %q", raw)
	}
}

// A page nested deeper than the HTML parser takes (512 open elements) is given as its text, and the parser's error,
// which holds the whole page, goes nowhere.
func TestToMarkdownDeep(t *testing.T) {
	got := convert(t, strings.Repeat("<div><ul><li><blockquote>", 2000)+"deep<script>SCRIPT</script>"+
		strings.Repeat("</blockquote></li></ul></div>", 2000)+"<p>after</p>")
	if got != "deep\nafter" {
		t.Errorf("deep page: %q", got[:min(len(got), 300)])
	}
}

// A cancelled fetch converts nothing.
func TestToMarkdownCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	page, _ := url.Parse("https://example.com/")
	if _, err := toMarkdown(ctx, strings.Repeat("<p>x</p>", 1000), page); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}
