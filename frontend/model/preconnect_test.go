package model

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// connServer is an Anthropic-format server on 127.0.0.1 that counts the connections it accepted.
type connServer struct {
	*httptest.Server
	mu    sync.Mutex
	conns []net.Conn
}

func newConnServer(t *testing.T) *connServer {
	s := &connServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(warmAnthropic))
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *connServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// waitCount waits until the server has accepted n connections (a connection dialled in the background).
func (s *connServer) waitCount(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.count() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server accepted %d connections, want %d", s.count(), n)
		}
	}
}

func stream(t *testing.T, c Client) {
	t.Helper()
	_, err := c.Stream(context.Background(), Request{MaxTokens: 16, Messages: []Message{{Role: RoleUser,
		Content: []Block{{Type: BlockText, Text: "hi"}}}}}, discard{})
	if err != nil {
		t.Fatal(err)
	}
}

// With Preconnect the provider's connection is dialled when the client is made, and the first request goes over
// it: the server accepts one connection in all, before the request. The control: without Preconnect nothing is
// dialled before the request.
func TestPreconnectDialsAheadForTheFirstRequest(t *testing.T) {
	srv := newConnServer(t)
	c, err := New(ProviderConfig{Type: TypeAnthropic, BaseURL: srv.URL, Model: "m", APIKey: "k", Preconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.waitCount(t, 1)
	stream(t, c)
	stream(t, c)
	if n := srv.count(); n != 1 {
		t.Errorf("the server accepted %d connections, want the one dialled ahead", n)
	}

	plain := newConnServer(t)
	c, _ = New(ProviderConfig{Type: TypeAnthropic, BaseURL: plain.URL, Model: "m", APIKey: "k"})
	time.Sleep(50 * time.Millisecond)
	if n := plain.count(); n != 0 {
		t.Fatalf("control: %d connections before any request without Preconnect", n)
	}
	stream(t, c)
}

// A connection dialled ahead that waited past preconnectFresh is closed, not used: the first request dials its own.
func TestPreconnectDropsAStaleConnection(t *testing.T) {
	defer func(d time.Duration) { preconnectFresh = d }(preconnectFresh)
	preconnectFresh = 20 * time.Millisecond
	srv := newConnServer(t)
	c, err := New(ProviderConfig{Type: TypeAnthropic, BaseURL: srv.URL, Model: "m", APIKey: "k", Preconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.waitCount(t, 1)
	time.Sleep(100 * time.Millisecond)
	stream(t, c)
	if n := srv.count(); n != 2 {
		t.Errorf("the server accepted %d connections, want the stale one and the request's own", n)
	}
	srv.mu.Lock()
	stale := srv.conns[0]
	srv.mu.Unlock()
	stale.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := stale.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the stale connection was not closed by the client: %v", err)
	}
}
