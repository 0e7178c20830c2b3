package acpagent

import (
	"bytes"
	"io"
	"sync"
)

// hookWriter is the protocol output. It lets the server learn when a given response is on the wire: the SDK writes
// a request's response only after the handler returns, and an update sent before that could overtake it.
type hookWriter struct {
	w   io.Writer
	wmu sync.Mutex // one message at a time: the SDK writes under its own lock, the inbox answers outside it

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

// The SDK drops false capabilities (omitempty) and adds empty objects the spec does not list; the answer to
// initialize is written as the spec gives it. sdkCaps is what the SDK writes for Garuda's capabilities
// (TestInitializeLineIsTheSpecs keeps the two in step with the pinned SDK).
var (
	initMarker = []byte(`"agentInfo":{"name":"garuda"`)
	sdkCaps    = []byte(`"agentCapabilities":{"auth":{},"loadSession":true,"mcpCapabilities":{"http":true,"sse":true},` +
		`"promptCapabilities":{"embeddedContext":true},"sessionCapabilities":{"close":{},"list":{},"resume":{}}}`)
	specCaps = []byte(`"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":true},` +
		`"mcpCapabilities":{"http":true,"sse":true},"sessionCapabilities":{"list":{},"resume":{},"close":{}}}`)
)

// Write writes one message (the SDK and the inbox write each message whole) and then fires its watches.
func (h *hookWriter) Write(p []byte) (int, error) {
	out := p
	if bytes.Contains(p, initMarker) {
		out = bytes.Replace(p, sdkCaps, specCaps, 1)
	}
	h.wmu.Lock()
	n, err := h.w.Write(out)
	h.wmu.Unlock()
	if err == nil {
		n = len(p)
	}
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
