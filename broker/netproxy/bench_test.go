package netproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkRequest is one small plain HTTP request, direct and through the proxy (a new connection each, as the
// proxy answers with Connection: close): the difference is the proxy's cost per request.
func BenchmarkRequest(b *testing.B) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer origin.Close()
	proxy, _ := serve(b, "127.0.0.1")
	for _, c := range []struct {
		name string
		c    *http.Client
	}{
		{"direct", &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}},
		{"proxy", client(proxy, nil)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := c.c.Get(origin.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
