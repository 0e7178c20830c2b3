package brokertest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// FetchOp is a web_fetch operation.
func FetchOp(url string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_WebFetch{WebFetch: &execv1.WebFetch{Url: url}}}
}

// WebServer serves a page, redirects (/to/HOST...), and a body that never ends, on 127.0.0.1; it returns the server
// and its port.
func WebServer(t testing.TB) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><h1>Garuda docs</h1><p>Read <a href="/more">more</a>.</p></body></html>`)
		case strings.HasPrefix(r.URL.Path, "/to/"):
			http.Redirect(w, r, "http://"+strings.TrimPrefix(r.URL.Path, "/to/"), http.StatusFound)
		case r.URL.Path == "/endless":
			w.Header().Set("Content-Type", "text/plain")
			chunk := []byte(strings.Repeat("y", 64<<10))
			for { // 10 GB, or until the reader stops
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}
