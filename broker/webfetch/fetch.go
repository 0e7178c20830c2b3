package webfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/garuda-dev/garuda/broker/netguard"
	"github.com/garuda-dev/garuda/internal/neterr"
)

// Limits of one fetch.
type Limits struct {
	MaxBytes     int64         // body bytes read (after decompression); more are cut. 0: MaxBytes
	Timeout      time.Duration // the whole fetch, every hop; 0: Timeout
	IdleTimeout  time.Duration // with no byte from the server (slow-loris); 0: IdleTimeout
	MaxRedirects int           // 0: MaxRedirects
}

// Defaults of Limits.
const (
	MaxBytes     = 10 << 20
	Timeout      = 60 * time.Second
	IdleTimeout  = 20 * time.Second
	MaxRedirects = 5
)

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = MaxBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = Timeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = IdleTimeout
	}
	if l.MaxRedirects <= 0 {
		l.MaxRedirects = MaxRedirects
	}
	return l
}

// Decide decides one hop before anything of it is looked up or dialled, and says which addresses it may reach;
// an error ends the fetch (a denial, or the user's no).
type Decide func(ctx context.Context, hop netguard.Target, n int) (netguard.Reach, error)

// Hop is what one request did, for the audit log.
type Hop struct {
	URL     string
	Address netip.AddrPort // what was dialled
	Status  int
	Bytes   int64
	Err     error
}

// Page is a fetched page, as text.
type Page struct {
	URL         string // the last hop's URL
	Status      int
	ContentType string
	Text        string   // Markdown for HTML, the text itself otherwise, valid UTF-8
	Notes       []string // cut, replaced bytes, downgraded to http…
}

// ErrNotText is the refusal of a binary body.
var ErrNotText = errors.New("not text")

// Fetch fetches first, following at most MaxRedirects redirects; decide is called for every hop (first included),
// dial goes through d, and onHop sees each request's end.
func Fetch(ctx context.Context, d *netguard.Dialer, first netguard.Target, decide Decide, onHop func(Hop), l Limits) (*Page, error) {
	l = l.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	t := first
	var notes []string
	for n := 0; ; n++ {
		reach, err := decide(ctx, t, n)
		if err != nil {
			return nil, err
		}
		resp, addr, err := get(ctx, d, t, reach, l)
		if err != nil {
			err = timeoutWords(ctx, err, l)
			onHop(Hop{URL: t.URL.String(), Address: addr, Err: err})
			return nil, err
		}
		if loc := resp.Header.Get("Location"); isRedirect(resp.StatusCode) && loc != "" {
			resp.Body.Close()
			onHop(Hop{URL: t.URL.String(), Address: addr, Status: resp.StatusCode})
			if n+1 > l.MaxRedirects {
				return nil, fmt.Errorf("%s redirects more than %d times: stopped", first.URL, l.MaxRedirects)
			}
			next, err := redirectTarget(t.URL, loc)
			if err != nil {
				return nil, fmt.Errorf("%s redirects to %q: %w", t.URL, loc, err)
			}
			if t.URL.Scheme == "https" && next.URL.Scheme == "http" {
				notes = append(notes, "redirected from https to plain http: "+next.URL.String())
			}
			t = next
			continue
		}
		page, nbytes, err := readPage(ctx, resp, t, l)
		resp.Body.Close()
		if err != nil {
			err = timeoutWords(ctx, err, l)
		}
		onHop(Hop{URL: t.URL.String(), Address: addr, Status: resp.StatusCode, Bytes: nbytes, Err: err})
		if err != nil {
			return nil, err
		}
		page.Notes = append(notes, page.Notes...)
		return page, nil
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func redirectTarget(base *url.URL, loc string) (netguard.Target, error) {
	u, err := base.Parse(loc)
	if err != nil {
		return netguard.Target{}, fmt.Errorf("the redirect does not parse: %w", err)
	}
	return netguard.ParseURL(u.String())
}

// get makes one request to t, dialling only t's checked addresses.
func get(ctx context.Context, d *netguard.Dialer, t netguard.Target, reach netguard.Reach, l Limits) (*http.Response,
	netip.AddrPort, error) {
	var reached netip.AddrPort
	tr := &http.Transport{
		Proxy: nil, // never the broker's environment's proxy
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != t.Addr() {
				return nil, fmt.Errorf("dial %s while fetching %s: %w", addr, t.Addr(), netguard.ErrRefused)
			}
			c, ap, err := d.Dial(ctx, t.Host, t.Port, reach)
			if err != nil {
				return nil, err
			}
			reached = ap
			return &idleConn{Conn: c, idle: l.IdleTimeout}, nil
		},
		ForceAttemptHTTP2:      true,
		DisableKeepAlives:      true,
		TLSHandshakeTimeout:    l.IdleTimeout,
		ResponseHeaderTimeout:  l.IdleTimeout,
		MaxResponseHeaderBytes: 1 << 20,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL.String(), nil)
	if err != nil {
		return nil, reached, fmt.Errorf("fetch %s: %w", t.URL, err)
	}
	req.Header.Set("User-Agent", "Garuda-web_fetch/1 (+https://github.com/garuda-dev/garuda)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, reached, neterr.Wrap(err) // the caller names the URL
	}
	return resp, reached, nil
}

// idleConn ends a connection on which nothing arrives for idle: defends against a server that keeps a fetch
// waiting by sending nothing (the whole fetch has its own limit besides, against one that trickles).
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(p)
}

// timeoutWords says which limit a timeout was (in place of the transport's words for it).
func timeoutWords(ctx context.Context, err error, l Limits) error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &neterr.Error{Words: fmt.Sprintf("the fetch took longer than %s and was stopped", l.Timeout), Err: err}
	case errors.As(err, &ne) && ne.Timeout():
		return &neterr.Error{Words: fmt.Sprintf("the server sent nothing for %s and the fetch was stopped", l.IdleTimeout), Err: err}
	}
	return err
}

// readPage reads a response body (bounded) and turns it into text.
func readPage(ctx context.Context, resp *http.Response, t netguard.Target, l Limits) (*Page, int64, error) {
	page := &Page{URL: t.URL.String(), Status: resp.StatusCode}
	body, err := io.ReadAll(io.LimitReader(resp.Body, l.MaxBytes+1))
	n := int64(len(body))
	if err != nil {
		return nil, n, neterr.Wrap(err) // the caller names the URL
	}
	if n > l.MaxBytes {
		body = body[:l.MaxBytes]
		page.Notes = append(page.Notes, fmt.Sprintf("the body is larger than %d MiB: only its first %d MiB were read",
			l.MaxBytes>>20, l.MaxBytes>>20))
	}
	ct := resp.Header.Get("Content-Type")
	mt, params, _ := mime.ParseMediaType(ct)
	if mt == "" {
		mt, params, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	page.ContentType = mt
	if !textual(mt) {
		return nil, n, fmt.Errorf("%s is %s, %w: web_fetch reads web pages and text only", t.URL, orUnknown(mt), ErrNotText)
	}
	if bytes.IndexByte(body[:min(len(body), 8192)], 0) >= 0 {
		return nil, n, fmt.Errorf("%s says it is %s, but its body is binary (%w): web_fetch reads web pages and text only",
			t.URL, mt, ErrNotText)
	}
	text, err := decode(body, mt, params["charset"], ct)
	if err != nil {
		return nil, n, fmt.Errorf("%s: %w", t.URL, err)
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
		page.Notes = append(page.Notes, "bytes that are not UTF-8 were replaced with \uFFFD")
	}
	if mt == "text/html" || mt == "application/xhtml+xml" {
		md, err := toMarkdown(ctx, text, t.URL)
		if err != nil {
			return nil, n, fmt.Errorf("convert %s to Markdown: %w", t.URL, err)
		}
		text = md
	}
	page.Text = text
	return page, n, nil
}

func orUnknown(mt string) string {
	if mt == "" {
		return "of an unknown type"
	}
	return mt
}

// textual reports whether a media type is text a model can read.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ecmascript", "application/yaml", "application/x-yaml", "application/toml", "application/x-sh",
		"application/sql", "application/graphql", "application/x-ndjson":
		return true
	}
	return false
}

// decode turns body into a string from its declared charset (for HTML also a <meta> one); UTF-8 as it is.
func decode(body []byte, mt, label, contentType string) (string, error) {
	if strings.EqualFold(label, "utf-8") || label == "" && mt != "text/html" {
		return string(body), nil
	}
	var r io.Reader
	var err error
	if mt == "text/html" {
		r, err = charset.NewReader(bytes.NewReader(body), contentType)
	} else {
		r, err = charset.NewReaderLabel(label, bytes.NewReader(body))
	}
	if err != nil {
		return string(body), nil // an unknown charset: read as UTF-8, bad bytes replaced
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("decode %s: %w", label, err)
	}
	return string(out), nil
}
