package netproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// BenchmarkDownload100MB is a 100 MB download, direct and through a CONNECT tunnel and plain forwarding.
func BenchmarkDownload100MB(b *testing.B) {
	const size = 100 << 20
	chunk := make([]byte, 256<<10)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk)
		}
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	proxy, _ := serve(b, "127.0.0.1")
	tlsConf := secure.Client().Transport.(*http.Transport).TLSClientConfig
	for _, c := range []struct {
		name, url string
		c         *http.Client
	}{
		{"direct-http", plain.URL, &http.Client{}},
		{"proxy-http", plain.URL, client(proxy, nil)},
		{"direct-https", secure.URL, &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}},
		{"proxy-connect-https", secure.URL, client(proxy, tlsConf)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				resp, err := c.c.Get(c.url)
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); n != size {
					b.Fatalf("%d bytes", n)
				}
				resp.Body.Close()
			}
		})
	}
}
