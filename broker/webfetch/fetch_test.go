package webfetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/netguard"
	"github.com/garuda-dev/garuda/internal/testenv"
)

func target(t *testing.T, raw string) netguard.Target {
	t.Helper()
	tg, err := netguard.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func allowAll(context.Context, netguard.Target, int) (netguard.Reach, error) {
	return netguard.Reach{Private: true}, nil
}

func fetch(t *testing.T, url string, l Limits) (*Page, []Hop, error) {
	t.Helper()
	var hops []Hop
	p, err := Fetch(context.Background(), &netguard.Dialer{}, target(t, url), allowAll, func(h Hop) { hops = append(hops, h) }, l)
	return p, hops, err
}

func TestFetchPages(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><head><title>T</title><script>alert(1)</script></head><body><h1>Hello</h1>`+
				`<p>A <a href="/next">link</a>.</p></body></html>`)
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9"))
		case "/badutf8":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("ok \xff\xfe end"))
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
		case "/nul":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("ELF\x00\x00\x00"))
		case "/untyped":
			w.Header()["Content-Type"] = nil
			w.Write([]byte("plain words"))
		case "/huge":
			w.Header().Set("Content-Type", "text/plain")
			line := []byte(strings.Repeat("x", 1023) + "\n")
			for i := 0; i < 1<<20; i++ { // a GiB unless the reader stops
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/hop":
			http.Redirect(w, r, "/html", http.StatusMovedPermanently)
		}
	}))
	defer srv.Close()

	p, _, err := fetch(t, srv.URL+"/html", Limits{})
	if err != nil || !strings.Contains(p.Text, "# Hello") || !strings.Contains(p.Text, "[link]("+srv.URL+"/next)") ||
		strings.Contains(p.Text, "alert") {
		t.Errorf("html: %+v %v", p, err)
	}
	if p, _, err := fetch(t, srv.URL+"/latin1", Limits{}); err != nil || p.Text != "café" {
		t.Errorf("latin1: %+v %v", p, err)
	}
	if p, _, err := fetch(t, srv.URL+"/badutf8", Limits{}); err != nil || p.Text != "ok \uFFFD end" || len(p.Notes) != 1 {
		t.Errorf("invalid UTF-8: %+v %v", p, err)
	}
	for _, path := range []string{"/png", "/nul"} {
		if _, _, err := fetch(t, srv.URL+path, Limits{}); !errors.Is(err, ErrNotText) {
			t.Errorf("%s: %v, want a refusal of a binary", path, err)
		}
	}
	if p, _, err := fetch(t, srv.URL+"/untyped", Limits{}); err != nil || p.Text != "plain words" {
		t.Errorf("untyped: %+v %v", p, err)
	}
	p, hops, err := fetch(t, srv.URL+"/huge", Limits{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatalf("huge: %v", err)
	}
	if len(p.Text) != 1<<20 || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "only its first 1 MiB") {
		t.Errorf("huge: %d bytes, %v", len(p.Text), p.Notes)
	}
	if len(hops) != 1 || hops[0].Bytes != 1<<20+1 {
		t.Errorf("huge: hops %+v", hops)
	}
	if _, hops, err := fetch(t, srv.URL+"/loop", Limits{MaxRedirects: 3}); err == nil ||
		!strings.Contains(err.Error(), "more than 3 times") || len(hops) != 4 {
		t.Errorf("loop: %v, %d hops", err, len(hops))
	}
	if p, hops, err := fetch(t, srv.URL+"/hop", Limits{}); err != nil || !strings.Contains(p.Text, "# Hello") ||
		len(hops) != 2 || hops[0].Status != 301 {
		t.Errorf("redirect: %+v %+v %v", p, hops, err)
	}
}

// A server that sends nothing, or trickles a byte at a time, is given up on (the idle and the total limit).
func TestFetchSlowServers(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for {
			if r.URL.Path == "/trickle" {
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
			}
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	if _, _, err := fetch(t, srv.URL+"/silent", Limits{IdleTimeout: 200 * time.Millisecond}); err == nil ||
		!strings.Contains(err.Error(), "sent nothing for") {
		t.Errorf("silent server: %v", err)
	}
	if _, _, err := fetch(t, srv.URL+"/trickle", Limits{Timeout: 300 * time.Millisecond}); err == nil ||
		!strings.Contains(err.Error(), "took longer than") {
		t.Errorf("trickling server: %v", err)
	}
}

// Each hop is decided: a denial of the second ends the fetch before its host is looked up.
func TestFetchDecidesEveryHop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/x", http.StatusFound)
	}))
	defer srv.Close()
	var decided []string
	denied := errors.New("denied")
	decide := func(_ context.Context, hop netguard.Target, n int) (netguard.Reach, error) {
		decided = append(decided, hop.Host)
		if n > 0 {
			return netguard.Reach{}, denied
		}
		return netguard.Reach{Private: true}, nil
	}
	_, err := Fetch(context.Background(), &netguard.Dialer{}, target(t, srv.URL), decide, func(Hop) {}, Limits{})
	if !errors.Is(err, denied) || strings.Join(decided, ",") != "127.0.0.1,elsewhere.invalid" {
		t.Errorf("got %v, decided %v", err, decided)
	}
}

// A fetch that fails on the way (nothing listens, not HTTP, not TLS, a body that says text but is binary) says so in
// words, not in the transport's text.
func TestFetchFailuresInWords(t *testing.T) {
	refused := testenv.RefusedAddress(t)
	garbage := testenv.Answering(t, "this is not http at all\r\n\r\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	}))
	defer srv.Close()
	for url, want := range map[string]string{
		"http://" + refused + "/":                                 "nothing accepts connections at " + refused + " (connection refused)",
		"http://" + garbage + "/":                                 "did not answer in HTTP",
		"https://" + strings.TrimPrefix(srv.URL, "http://") + "/": "does not speak TLS",
		srv.URL + "/lying":                                        "says it is text/plain, but its body is binary",
	} {
		_, _, err := fetch(t, url, Limits{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", url, err, want)
			continue
		}
		for _, raw := range []string{"dial tcp", "net/http:", "tls:", ", not text"} {
			if strings.Contains(err.Error(), raw) {
				t.Errorf("%s: the transport's text %q in %q", url, raw, err)
			}
		}
	}
}
