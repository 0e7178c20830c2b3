package acpagent

import (
	"bytes"
	"io"
	"sync"
)

// hookWriter is the protocol output. It lets the server learn when a given response is on the wire: the SDK writes
// a request's response only after the handler returns, and an update sent before that could overtake it.
type hookWriter struct {
	w io.Writer

	mu      sync.Mutex
	watches []watch
}

type watch struct {
	marker []byte
	done   chan struct{}
}

func newHookWriter(w io.Writer) *hookWriter { return &hookWriter{w: w} }

// watch returns a channel that closes after the first message that contains marker has been written.
func (h *hookWriter) watch(marker string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(chan struct{})
	h.watches = append(h.watches, watch{marker: []byte(marker), done: c})
	return c
}

// Write writes one message (the SDK writes each message whole, under its own lock) and then fires its watches.
func (h *hookWriter) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	h.mu.Lock()
	kept := h.watches[:0]
	for _, w := range h.watches {
		if bytes.Contains(p, w.marker) {
			close(w.done)
			continue
		}
		kept = append(kept, w)
	}
	h.watches = kept
	h.mu.Unlock()
	return n, err
}
