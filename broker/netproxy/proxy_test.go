package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/garuda-dev/garuda/broker/netguard"
	"github.com/garuda-dev/garuda/internal/testenv"
)

// serve runs a proxy on 127.0.0.1 that allows the hosts in allow (with their private addresses); finish stops it
// and returns the records of its connections.
func serve(t testing.TB, allow ...string) (string, func() []Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var recs []Conn
	p := &Proxy{Dialer: &netguard.Dialer{}, Record: func(c Conn) { mu.Lock(); recs = append(recs, c); mu.Unlock() },
		Decide: func(_ context.Context, host string, _ uint16) (netguard.Reach, error) {
			for _, a := range allow {
				if a == host {
					return netguard.Reach{Private: true}, nil
				}
			}
			return netguard.Reach{}, fmt.Errorf("%s is not allowed; add network(domain:%s)", host, host)
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Serve(ctx, ln); close(done) }()
	var once sync.Once
	finish := func() []Conn {
		once.Do(func() { cancel(); <-done })
		mu.Lock()
		defer mu.Unlock()
		return append([]Conn(nil), recs...)
	}
	t.Cleanup(func() { finish() })
	return ln.Addr().String(), finish
}

func client(proxy string, tlsConf *tls.Config) *http.Client {
	pu, _ := url.Parse("http://" + proxy)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: tlsConf}}
}

func TestProxyRequests(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin %s %s host=%s", r.Method, r.URL.RequestURI(), r.Host)
	}))
	defer origin.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls origin") }))
	defer secure.Close()
	proxy, finish := serve(t, "127.0.0.1")
	get := func(c *http.Client, u string) (int, string) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	c := client(proxy, secure.Client().Transport.(*http.Transport).TLSClientConfig)
	if code, body := get(c, origin.URL+"/a?b=1"); code != 200 || body != "origin GET /a?b=1 host="+strings.TrimPrefix(origin.URL, "http://") {
		t.Errorf("plain HTTP: %d %q", code, body)
	}
	if code, body := get(c, secure.URL+"/"); code != 200 || body != "tls origin" {
		t.Errorf("CONNECT: %d %q", code, body)
	}
	// A host the policy refuses: 403, with the words saying how to allow it; nothing is dialled.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(origin.URL, "http://"))
	if code, body := get(c, "http://localhost:"+port+"/"); code != 403 || !strings.Contains(body, "add network(domain:localhost)") {
		t.Errorf("refused host: %d %q", code, body)
	}
	raw := func(req string) string {
		t.Helper()
		conn, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, req)
		line, _ := bufio.NewReader(conn).ReadString('\n')
		return line
	}
	host := strings.TrimPrefix(origin.URL, "http://")
	for req, want := range map[string]string{
		"GET http://" + host + "/ HTTP/1.1\r\nHost: evil.example\r\n\r\n":                           "400",
		"GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\nHost: evil.example\r\n\r\n":     "400",
		"GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n":                                              "400",
		"CONNECT 2130706433:443 HTTP/1.1\r\n\r\n":                                                   "400",
		"GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n":                           "200", // the control
		"CONNECT " + strings.TrimPrefix(secure.URL, "https://") + " HTTP/1.1\r\nHost: x.io\r\n\r\n": "400",
	} {
		if got := raw(req); !strings.Contains(got, " "+want+" ") {
			t.Errorf("%q: %q, want %s", req, got, want)
		}
	}
	var allowed, denied, refused int
	recs := finish()
	for _, r := range recs {
		switch {
		case r.Verdict == "allow" && r.Address.IsValid() && r.Down > 0:
			allowed++
		case r.Verdict == "deny" && r.Host == "localhost":
			denied++
		case r.Verdict == "refused":
			refused++
		}
	}
	if allowed != 3 || denied != 1 || refused != 5 {
		t.Errorf("records: %d allowed, %d denied, %d refused: %+v", allowed, denied, refused, recs)
	}
}

// The guard still checks addresses behind an allowed host: an allowed name gets no private address it was not given.
func TestProxyChecksAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := &Proxy{Dialer: &netguard.Dialer{}, Decide: func(context.Context, string, uint16) (netguard.Reach, error) {
		return netguard.Reach{}, nil // allowed by a wildcard: no private address
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Serve(ctx, ln)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	resp, err := client(ln.Addr().String(), nil).Get(origin.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "loopback") {
		t.Errorf("%d %q", resp.StatusCode, b)
	}
	if errors.Is(err, netguard.ErrRefused) {
		t.Fatal("unreachable")
	}
}

// Past MaxConns a connection is answered 503 at once (control: the first ones are served).
func TestProxyMaxConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Dialer: &netguard.Dialer{}, MaxConns: 2, Decide: func(context.Context, string, uint16) (netguard.Reach, error) {
		return netguard.Reach{}, errors.New("no")
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Serve(ctx, ln)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// The two held connections are open (sent nothing yet); the third is refused.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.Contains(line, " 503 ") {
		t.Errorf("the third connection: %q", line)
	}
	io.WriteString(held[0], "CONNECT x.io:443 HTTP/1.1\r\n\r\n")
	if line, _ := bufio.NewReader(held[0]).ReadString('\n'); !strings.Contains(line, " 403 ") {
		t.Errorf("a held connection: %q (want the policy's 403)", line)
	}
}

// An allowed host that cannot be reached is a 502 whose body says why in words (what curl shows the command's user),
// not the transport's text; the audit record keeps the cause.
func TestProxyUnreachableInWords(t *testing.T) {
	refused := testenv.RefusedAddress(t)
	proxy, finish := serve(t, "127.0.0.1")
	resp, err := client(proxy, nil).Get("http://" + refused + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "Garuda's proxy could not reach " + refused + ": nothing accepts connections at " + refused + " (connection refused)"
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), want) || strings.Contains(string(b), "dial tcp") {
		t.Errorf("%d %q, want 502 with %q", resp.StatusCode, b, want)
	}
	if recs := finish(); len(recs) != 1 || recs[0].Verdict != "failed" || !strings.Contains(recs[0].Reason, "connection refused") {
		t.Errorf("records: %+v", recs)
	}
}
