package neterr

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// get is one GET of url through a fresh transport (no proxy), and its error.
func get(t *testing.T, url string, tr *http.Transport) error {
	t.Helper()
	if tr == nil {
		tr = &http.Transport{}
	}
	tr.Proxy = nil
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s: no error", url)
	}
	return err
}

// Each failure of a real connection (on 127.0.0.1) is said in words that name the address, never in the
// transport's text; the error still unwraps to the transport's.
func TestWordsOfRealFailures(t *testing.T) {
	refused := testenv.RefusedAddress(t)
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the test, not news
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	garbage := testenv.Answering(t, "this is not http at all\r\n\r\n")
	short := testenv.Answering(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
	bigHead := testenv.Answering(t, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")

	for _, c := range []struct {
		name, url string
		tr        *http.Transport
		want      string
		is        error
	}{
		{"refused", "http://" + refused + "/", nil, "nothing accepts connections at " + refused + " (connection refused)", syscall.ECONNREFUSED},
		{"not TLS", "https://" + strings.TrimPrefix(plain.URL, "http://") + "/", nil, "does not speak TLS", nil},
		{"unknown authority", tlsSrv.URL, nil, "not signed by an authority this machine trusts", nil},
		{"not HTTP", "http://" + garbage + "/", nil, "did not answer in HTTP", nil},
		{"headers too big", "http://" + bigHead + "/", &http.Transport{MaxResponseHeaderBytes: 1 << 20}, "response headers are over 1 MiB", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := get(t, c.url, c.tr)
			w := Wrap(err)
			if !strings.Contains(w.Error(), c.want) {
				t.Errorf("%v\nin words: %q, want %q", err, w, c.want)
			}
			for _, raw := range []string{"dial tcp", "net/http:", "tls:", "x509:"} {
				if strings.Contains(w.Error(), raw) {
					t.Errorf("the words hold the transport's text %q: %q", raw, w)
				}
			}
			if c.is != nil && !errors.Is(w, c.is) {
				t.Errorf("%q does not unwrap to %v", w, c.is)
			}
		})
	}

	// A host that does not exist, as the resolver says it.
	dns := &net.DNSError{Err: "no such host", Name: "no-such-host.invalid", IsNotFound: true}
	want := "the host no-such-host.invalid does not exist (DNS has no address for it)"
	if w, ok := Words(&net.OpError{Op: "dial", Net: "tcp", Err: dns}); !ok || w != want {
		t.Errorf("DNS: %q %v", w, ok)
	}
	// A body cut short is said too.
	resp, err := http.Get("http://" + short + "/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if w, ok := Words(err); !ok || !strings.Contains(w, "closed the connection before its answer was complete") {
		t.Errorf("cut short: %v: %q %v", err, w, ok)
	}
	// What it does not know stays as it is.
	other := errors.New("something else")
	if Wrap(other) != other || Wrap(nil) != nil {
		t.Error("Wrap changed an error it does not know")
	}
}
