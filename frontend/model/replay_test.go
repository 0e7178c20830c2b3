package model

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// reply is one scripted HTTP answer: a fixture from testdata/ sent byte for byte.
type reply struct {
	status int    // 0: 200 with an event stream
	file   string // in testdata/
}

type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// replayServer answers each request with the next reply, writing event streams in small
// pieces (7 bytes, flushed) so that events arrive split across reads, as they do on a network.
type replayServer struct {
	*httptest.Server
	mu      sync.Mutex
	replies []reply
	reqs    []recorded
}

func newReplay(t *testing.T, replies ...reply) *replayServer {
	t.Helper()
	s := &replayServer{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
		if len(s.replies) == 0 {
			s.mu.Unlock()
			http.Error(w, `{"error":{"type":"invalid_request_error","message":"test: no reply left"}}`, http.StatusBadRequest)
			return
		}
		rep := s.replies[0]
		s.replies = s.replies[1:]
		s.mu.Unlock()
		data, err := os.ReadFile(filepath.Join("testdata", rep.file))
		if err != nil {
			t.Errorf("fixture: %v", err)
			http.Error(w, err.Error(), 500)
			return
		}
		if rep.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after-ms", "1") // keep the retry wait short
			w.WriteHeader(rep.status)
			w.Write(data)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for len(data) > 0 {
			n := min(7, len(data))
			w.Write(data[:n])
			f.Flush()
			data = data[n:]
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *replayServer) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

// collect is a Handler that keeps every delta.
type collect struct {
	mu       sync.Mutex
	text     []string
	thinking []string
}

func (c *collect) Delta(kind DeltaKind, s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kind == DeltaText {
		c.text = append(c.text, s)
	} else {
		c.thinking = append(c.thinking, s)
	}
}

// streamOK streams userHi through c to h and fails the test on an error.
func streamOK(t *testing.T, c Client, h Handler) *Response {
	t.Helper()
	resp, err := c.Stream(context.Background(), userHi, h)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
