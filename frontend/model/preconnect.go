package model

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// preconnectFresh is how long a connection dialled ahead waits to be taken; an older one is closed, never used (a
// server may drop a connection that sends nothing).
var preconnectFresh = 5 * time.Second

// publicAPI is the URL the SDKs use for a provider type when the config names none.
var publicAPI = map[string]string{TypeAnthropic: "https://api.anthropic.com/", TypeOpenAI: "https://api.openai.com/v1/"}

// preconnected returns an HTTP client (Go's default transport's settings) whose first connection to the provider of
// cfg is dialled now, in the background: the first request then waits neither for its DNS lookup nor for its TCP
// handshake. nil where that does not apply: a proxy would be dialled instead, or the URL cannot be told.
func preconnected(cfg ProviderConfig) *http.Client {
	base := cfg.BaseURL
	if base == "" {
		base = publicAPI[cfg.Type]
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if px, err := t.Proxy(&http.Request{URL: u}); err != nil || px != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p := &predial{addr: net.JoinHostPort(u.Hostname(), port), at: time.Now(), conn: make(chan net.Conn, 1),
		dialer: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}} // http.DefaultTransport's
	go func() {
		c, err := p.dialer.Dial("tcp", p.addr)
		if err != nil {
			close(p.conn)
			return
		}
		p.conn <- c
	}()
	time.AfterFunc(preconnectFresh, p.drop)
	t.DialContext = p.DialContext
	return &http.Client{Transport: t}
}

// predial is one connection dialled ahead, for the first dial of its address.
type predial struct {
	addr   string
	at     time.Time
	dialer *net.Dialer
	conn   chan net.Conn // the connection; closed if its dial failed

	mu    sync.Mutex
	taken bool
}

// DialContext hands the connection dialled ahead to the first dial of its address while it is fresh; every other
// dial is the transport's own.
func (p *predial) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network == "tcp" && addr == p.addr && p.claim() {
		select {
		case c, ok := <-p.conn:
			if ok && time.Since(p.at) <= preconnectFresh {
				return c, nil
			}
			if ok {
				c.Close()
			}
		case <-ctx.Done():
			go p.closeWhenDialled()
		}
	}
	return p.dialer.DialContext(ctx, network, addr)
}

// claim reports whether the connection dialled ahead was still there to take, and takes it.
func (p *predial) claim() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return false
	}
	p.taken = true
	return true
}

// drop closes the connection dialled ahead if nobody took it while it was fresh.
func (p *predial) drop() {
	if p.claim() {
		p.closeWhenDialled()
	}
}

func (p *predial) closeWhenDialled() {
	if c, ok := <-p.conn; ok {
		c.Close()
	}
}
