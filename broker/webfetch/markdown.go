package webfetch

import (
	"context"
	"net/url"
	"strings"
	"sync"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// markdown is the HTML converter, made at its first use (not when the broker starts).
var markdown = sync.OnceValue(func() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin()))
})

// unseen are the elements whose content a reader of the page never sees as text: they are taken out of the tree
// before it is converted (the converter would otherwise write an SVG's title, a template's or a select's text).
var unseen = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true, atom.Math: true,
	atom.Iframe: true, atom.Frame: true, atom.Frameset: true, atom.Object: true, atom.Embed: true, atom.Canvas: true,
	atom.Video: true, atom.Audio: true, atom.Select: true, atom.Textarea: true, atom.Input: true, atom.Button: true,
	atom.Head: true,
}

// toMarkdown converts an HTML page to Markdown with html-to-markdown (a maintained converter). The page is parsed by
// golang.org/x/net/html (the HTML5 parsing algorithm: unclosed and misnested tags are read as a browser reads them);
// what never becomes text a reader sees is taken out, the head but its title, which heads the Markdown. Links and
// images become absolute, relative to the page's URL. A page the parser refuses (nested deeper than its 512 open
// elements) is given as its text. The conversion itself cannot be interrupted: a cancel is seen before and after it,
// and it is bounded by the 10 MiB a fetch reads.
func toMarkdown(ctx context.Context, page string, base *url.URL) (string, error) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		// Not the parser's error: it holds the whole page.
		return textOf(page), nil
	}
	title := prune(doc)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	out, err := markdown().ConvertNode(doc, converter.WithContext(ctx), converter.WithDomain(base.String()))
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	md := strings.TrimSpace(string(out))
	if title != "" && !strings.HasPrefix(md, "# "+title+"\n") && md != "# "+title {
		md = strings.TrimSpace("# " + title + "\n\n" + md)
	}
	return md, nil
}

// prune takes the unseen elements and comments out of the tree and returns the page's title (its spaces folded).
func prune(n *html.Node) string {
	var title string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			switch {
			case c.Type == html.ElementNode && c.DataAtom == atom.Title && title == "":
				title = strings.Join(strings.Fields(textContent(c)), " ")
				n.RemoveChild(c)
			case c.Type == html.CommentNode, c.Type == html.ElementNode && unseen[c.DataAtom]:
				if c.DataAtom == atom.Head {
					walk(c) // for its title
				}
				n.RemoveChild(c)
			default:
				walk(c)
			}
			c = next
		}
	}
	walk(n)
	return title
}

func textContent(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// textOf is a page's text without its markup, for a page the parser refuses: its text tokens, a line each, without
// what scripts and styles hold.
func textOf(page string) string {
	z := html.NewTokenizer(strings.NewReader(page))
	var lines []string
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(lines, "\n")
		case html.StartTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.Script || atom.Lookup(name) == atom.Style {
				skip++
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); (atom.Lookup(name) == atom.Script || atom.Lookup(name) == atom.Style) && skip > 0 {
				skip--
			}
		case html.TextToken:
			if t := strings.Join(strings.Fields(string(z.Text())), " "); t != "" && skip == 0 {
				lines = append(lines, t)
			}
		}
	}
}
