package model

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// A provider that cannot be reached is said in words, naming its address, for each provider type; a connection
// that will fail the same way however often it is tried (an http server given as https) is not retried.
func TestConnectionFailuresInWords(t *testing.T) {
	refused := testenv.RefusedAddress(t)
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	notTLS := "https://" + strings.TrimPrefix(plain.URL, "http://")
	for _, typ := range []string{TypeAnthropic, TypeOpenAI} {
		for _, c := range []struct {
			base, want string
			retry      bool
		}{
			{"http://" + refused, "nothing accepts connections at " + refused + " (connection refused)", true},
			{notTLS, "does not speak TLS", false},
		} {
			cfg := ProviderConfig{Type: typ, BaseURL: c.base, APIKey: "k", Model: "m"}
			if typ == TypeOpenAI {
				cfg.BaseURL += "/v1"
			}
			cl, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Stream(context.Background(), userHi, &collect{})
			var se *StreamError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) || se.Retryable != c.retry {
				t.Errorf("%s %s: %v (retryable %v), want %q (retryable %v)", typ, c.base, err, se != nil && se.Retryable, c.want, c.retry)
			}
			for _, raw := range []string{"dial tcp", "tls:", "Post \""} {
				if err != nil && strings.Contains(err.Error(), raw) {
					t.Errorf("%s %s: the transport's text %q in %q", typ, c.base, raw, err)
				}
			}
		}
	}
}
