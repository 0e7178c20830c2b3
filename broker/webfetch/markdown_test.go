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

// What a page's reader sees becomes Markdown: headings, emphasis, links and images made absolute, lists (nested,
// numbered from their start), code (fenced with its language; a fence longer than any run of backticks in it),
// quotes, tables (pipes escaped), rules and line breaks; Markdown's own characters in the text are escaped.
func TestToMarkdown(t *testing.T) {
	for _, c := range []struct{ name, html, want string }{
		{"headings", `<h1>Top</h1><h3>Third <small>level</small></h3>`, "# Top\n\n### Third level"},
		{"emphasis", `<p>a <b> bold </b>and <em>it</em><strong></strong> <del>gone</del>.</p>`, "a **bold** and *it* ~~gone~~."},
		{"links", `<p><a href="/x">rel</a> <a href="https://go.dev/a b">abs</a> <a href="#s">frag</a> <a href="/e"> </a>` +
			`<a href="javascript:alert(1)">js</a> <a href="/t" title="T &quot;q&quot;">titled</a> ` +
			`<a href="/p" aria-label="Print"><svg></svg></a></p>`,
			`[rel](https://example.com/x) [abs](https://go.dev/a%20b) [frag](https://example.com/docs/page.html#s) js ` +
				`[titled](https://example.com/t "T \"q\"") [Print](https://example.com/p)`},
		{"images", `<p><img src="i.png" alt="An image"> <img src="data:image/png;base64,AAAA" alt="inline"> <img src="x.png">` +
			` <a href="/big"><img src="/small.png" alt="thumb"></a></p>`,
			"![An image](https://example.com/docs/i.png) inline ![](https://example.com/docs/x.png) " +
				"[![thumb](https://example.com/small.png)](https://example.com/big)"},
		{"lists", `<ul><li>one</li><li>two<ul><li>deep</li></ul></li></ul><ol start="3"><li>three<li>four</ol>`,
			"- one\n- two\n  - deep\n\n3. three\n4. four"},
		{"loose list", `<ol><li><p>para</p><p>second</p></li><li>next</li></ol>`, "1. para\n\n   second\n\n2. next"},
		{"code", "<p>call <code>f(x)</code> or <code>a`b</code></p><pre><code class=\"language-go\">func f() {\n\treturn\n}\n</code></pre>" +
			"<pre>has ``` inside</pre>",
			"call `f(x)` or ``a`b``\n\n```go\nfunc f() {\n\treturn\n}\n```\n\n````\nhas ``` inside\n````"},
		{"quote", `<blockquote><p>said</p><p>more</p></blockquote><p>after</p>`, "> said\n>\n> more\n\nafter"},
		{"table", `<table><caption>Cap</caption><tr><th>a</th><th>b|c</th></tr><tr><td>1</td><td><code>x|y</code></td>` +
			`<td>extra</td></tr><tr><td>only</td></tr></table>`,
			"Cap\n\n| a | b\\|c |  |\n| --- | --- | --- |\n| 1 | `x\\|y` | extra |\n| only |"},
		{"rule and breaks", `<p>one<br>two</p><hr><p>three</p>`, "one\ntwo\n\n* * *\n\nthree"},
		{"escapes", `<p>2024. was * a _year_ of snake_case [links] &lt;tags&gt;</p><p># not a heading</p>`,
			"2024\\. was \\* a \\_year\\_ of snake_case \\[links\\] \\<tags>\n\n\\# not a heading"},
		{"definitions", `<dl><dt>Term</dt><dd>Meaning</dd></dl>`, "Term\n\n: Meaning"},
		{"unclosed and misnested", `<p>one<p>two <b>bold <i>both</b> after</i><div>block`, "one\n\ntwo **bold *both*** after\n\nblock"},
		{"unclosed items and cells", `<ul><li>a<li>b<ul><li>c</ul><li>d</ul><table><tr><td>1<td><b>2</b><tr><td>3</table>x`,
			"- a\n- b\n  - c\n- d\n\n| 1 | **2** |\n| --- | --- |\n| 3 |\n\nx"},
		{"table without rows or head", `<table><td>lone</td></table><table>text only</table>`, "| lone |\n| --- |\n\ntext only"},
		{"nested table", `<table><tr><td>out<table><tr><td>in1</td><td>in2</td></tr></table></td><td>next</td></tr></table>`,
			"| out in1 in2 | next |\n| --- | --- |"},
		{"stray end tags", `<div>a</span></b></li></td></table>b</div></div><p>c</p>`, "ab\n\nc"},
		{"unclosed pre", "<div><pre>x := 1\n<b>y</b></div><p>after</p>", "```\nx := 1\ny\n```\n\nafter"},
		{"pre in a list", "<ul><li>run<pre>go test\ngo vet</pre></li></ul>", "- run\n\n  ```\n  go test\n  go vet\n  ```"},
		{"code keeps markup characters", `<p><code>a*b_c &lt;T&gt;</code></p>`, "`a*b_c <T>`"},
		{"blocks inside a link or a cell", `<a href="/c"><h3>Card</h3><p>text</p><blockquote>q</blockquote></a>` +
			`<table><tr><td><h2>In</h2><ul><li>a</li><li>b</li></ul><blockquote>q</blockquote></td></tr></table>`,
			"[Card text q](https://example.com/c)\n\n| In a b q |\n| --- |"},
		{"whitespace", "<p>  many \n\t spaces  </p>\n\n\n<p>\n</p><div><div><p>deep</p></div></div>", "many spaces\n\ndeep"},
		{"entities", `<p>caf&eacute; &amp; &#x1F600; &nbsp;x</p>`, "café & \U0001F600 \u00a0x"},
	} {
		if got := convert(t, c.html); got != c.want {
			t.Errorf("%s:\n%s\n--- got:\n%s\n--- want:\n%s", c.name, c.html, got, c.want)
		}
	}
}

// What never becomes text a reader sees is left out before anything is written: scripts, styles, SVG (its title and
// text too), noscript, templates, frames, the head but its title, form fields, comments.
func TestToMarkdownLeavesOut(t *testing.T) {
	page := `<!DOCTYPE html><html><head><title>The  Title</title><meta name="x" content="META"><link rel="stylesheet" href="LINK">` +
		`<style>p { color: STYLE }</style><script>var SCRIPT = 1;</script><base href="/BASE/"></head><body>` +
		`<p>visible</p><script type="application/ld+json">{"JSONLD": 1}</script>` +
		`<svg viewBox="0 0 1 1"><title>SVGTITLE</title><text>SVGTEXT</text><svg><desc>INNERSVG</desc></svg></svg>` +
		`<noscript><p>NOSCRIPT</p></noscript><template><p>TEMPLATE</p></template><iframe src="/f">IFRAME</iframe>` +
		`<form><input value="INPUT"><textarea>TEXTAREA</textarea><select><option>OPTION</option></select>` +
		`</form><!-- COMMENT --><math><mi>MATH</mi></math><canvas>CANVAS</canvas>` +
		`<object data="x">OBJECT</object><video>VIDEO</video><p>end</p></body></html>`
	got := convert(t, page)
	if want := "# The Title\n\nvisible\n\nend"; got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// Skipped content holds no text even when it looks like markup, nested, or inside a code block.
	skippedInside := "<pre>a<script>if (x<y) { b() }</script>c</pre><svg><svg/><g><text>T</text></g></svg><p>end</p>"
	if got := convert(t, skippedInside); got != "```\nac\n```\n\nend" {
		t.Errorf("skipped inside: %q", got)
	}
	// The title is not repeated when the page's first heading says it already.
	if got := convert(t, `<title>Same</title><h1>Same</h1><p>x</p>`); got != "# Same\n\nx" {
		t.Errorf("title and heading: %q", got)
	}
}

// A page nested deeper than any browser keeps its text, and nothing breaks (the depth is bounded).
func TestToMarkdownDeep(t *testing.T) {
	got := convert(t, strings.Repeat("<div><ul><li><blockquote>", 2000)+"deep"+
		strings.Repeat("</blockquote></li></ul></div>", 2000)+"<p>after</p>")
	if !strings.Contains(got, "deep") || !strings.HasSuffix(got, "\n\nafter") {
		t.Errorf("deep page: %q", got[max(0, len(got)-200):])
	}
	for _, line := range strings.Split(got, "\n") {
		if len(line) > maxPrefix+len("deep") {
			t.Fatalf("a line of %d bytes: %q", len(line), line)
		}
	}
}

// A cancelled fetch stops the conversion of a large page.
func TestToMarkdownCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	page, _ := url.Parse("https://example.com/")
	if _, err := toMarkdown(ctx, strings.Repeat("<p>x</p>", 100000), page); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}
