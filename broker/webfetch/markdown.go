package webfetch

import (
	"context"
	"net/url"
	"sync"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
)

// markdown is the HTML converter, made at its first use (not when the broker starts).
var markdown = sync.OnceValue(func() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin()))
})

// toMarkdown converts an HTML page; links and images become absolute, relative to the page's URL.
func toMarkdown(ctx context.Context, html string, page *url.URL) (string, error) {
	return markdown().ConvertString(html, converter.WithContext(ctx), converter.WithDomain(page.String()))
}
