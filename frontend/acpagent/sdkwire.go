package acpagent

// The ACP SDK (github.com/coder/acp-go-sdk v0.13.0, the only version the Go module proxy serves) is worked around at
// the byte level in three places, all in this file, so that they can go together when the SDK allows:
//
//  1. inbox, the protocol input: it notes the order of a session's prompts and cancels (the SDK runs each request
//     in a goroutine of its own), and answers a line over the SDK's 10 MiB limit with an error (the SDK would close
//     the connection, ending every session, and log the whole line).
//  2. the initialize patch, in hookWriter.Write (acpinit.SpecLine): the SDK drops false capabilities and adds objects the spec does
//     not list; the answer to initialize is written as the spec gives it.
//  3. response detection by substring, hookWriter.watch: the SDK writes a response only after its handler returns,
//     and the server must know when one is on the wire before it sends what must follow it.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/acpagent/acpinit"
)

// maxLine is the longest message the SDK reads, its newline included; a longer line makes it close the connection.
const maxLine = 10 << 20

// headSize is how much of a line over maxLine is kept, to find its id.
const headSize = 64 << 10

// inbox is the protocol input. It reads each of the editor's messages before the SDK does, for two things the SDK
// cannot do:
//   - it notes the order of a session's prompts and cancels: the SDK runs each request in a goroutine of its own and
//     the notifications in another, so a session/cancel sent right after its session/prompt could be handled before
//     that prompt's turn exists, and the turn would then run on as if never stopped;
//   - it answers a message over the SDK's limit with an error, where the SDK would close the connection and so end
//     every session (a big selection sent as embedded context is enough);
//   - it hands the SDK nothing, not even the end of the input, until Serve has set the connection's logger: the SDK
//     starts reading in NewAgentSideConnection, and SetLogger after it races with the reader's first log.
type inbox struct {
	r    *bufio.Reader
	srv  *server
	line []byte // what is left of the line being handed to the SDK
	err  error  // the error that ended the input, returned once the line is handed on
}

func newInbox(r io.Reader, srv *server) *inbox {
	return &inbox{r: bufio.NewReaderSize(r, headSize), srv: srv}
}

// Read hands the SDK the editor's messages, one line at a time.
func (in *inbox) Read(p []byte) (int, error) {
	<-in.srv.ready
	for len(in.line) == 0 {
		if in.err != nil {
			return 0, in.err
		}
		in.line, in.err = in.next()
	}
	n := copy(p, in.line)
	in.line = in.line[n:]
	return n, nil
}

// next reads the next line for the SDK, noting the prompts and cancels in it; a line over maxLine is answered here.
func (in *inbox) next() ([]byte, error) {
	for {
		line, tooLong, err := in.readLine()
		if !tooLong && !malformed(line) {
			in.srv.noteMessage(line)
			return line, err
		}
		if !tooLong {
			// The SDK would log the whole line (5 MB of garbage is 5 MB in the editor's log) and answer nothing.
			in.srv.opts.Log.Warn("a line that is not JSON was dropped", "bytes", len(line), "head", logHead(line))
			if err != nil {
				return nil, err
			}
			continue
		}
		in.srv.tooLarge(line)
		if err != nil {
			return nil, err
		}
	}
}

// readLine reads one line, its newline included. Of a line over maxLine only the head is kept, and tooLong is set.
func (in *inbox) readLine() (line []byte, tooLong bool, err error) {
	for {
		frag, e := in.r.ReadSlice('\n')
		if !tooLong && len(line)+len(frag) > maxLine {
			tooLong = true
			line = line[:min(len(line), headSize)]
		}
		if tooLong {
			frag = frag[:min(len(frag), headSize-len(line))]
		}
		line = append(line, frag...)
		if e != bufio.ErrBufferFull {
			return line, tooLong, e
		}
	}
}

// logHead is as much of a line as a log should carry.
const logHeadSize = 300

func logHead(line []byte) string {
	if len(line) <= logHeadSize {
		return string(line)
	}
	return string(line[:logHeadSize]) + "…"
}

// malformed reports a line with content that is not one JSON value.
func malformed(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && !json.Valid(t)
}

// message is the part of a JSON-RPC message that the SDK reads first (its anyMessage), to classify a line as it
// does.
type message struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
}

// noteMessage tells a session that a prompt or a cancel of it was read. It decodes and checks the message as the SDK
// does before it runs the handler, so exactly the prompts that reach Prompt are counted.
func (s *server) noteMessage(line []byte) {
	var m message
	if json.Unmarshal(line, &m) != nil {
		return
	}
	switch {
	case m.Method == acp.AgentMethodSessionPrompt && m.ID != nil:
		var p acp.PromptRequest
		if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
			return
		}
		if sess, err := s.lookup(p.SessionId); err == nil {
			sess.promptRead()
		}
	case m.Method == acp.AgentMethodSessionCancel && m.ID == nil:
		var p acp.CancelNotification
		if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
			return
		}
		if sess, err := s.lookup(p.SessionId); err == nil {
			sess.cancelRead()
		}
	}
}

// tooLarge answers a request whose line is over maxLine with an invalid-params error; a notification is dropped.
func (s *server) tooLarge(head []byte) {
	id := headID(head)
	s.opts.Log.Warn("a message over the size limit was not read", "limit", maxLine, "id", string(id))
	if id == nil || string(id) == "null" {
		return
	}
	msg := fmt.Sprintf("the message is too large: Garuda reads at most %d MiB per message; send a smaller selection, "+
		"or link the file instead of embedding it", maxLine>>20)
	resp, err := json.Marshal(struct {
		JSONRPC string            `json:"jsonrpc"`
		ID      json.RawMessage   `json:"id"`
		Error   *acp.RequestError `json:"error"`
	}{"2.0", id, invalidParams(msg)})
	if err != nil {
		return
	}
	if _, err := s.out.Write(append(resp, '\n')); err != nil {
		s.opts.Log.Debug("answer a message over the size limit", "err", err)
	}
}

// headID is the id of a JSON-RPC message from the head of its line: found when "id" comes before the value that the
// head cuts off, as editors write it (first, or in sorted keys).
func headID(head []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(head))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil
		}
		if k == "id" {
			return v
		}
	}
	return nil
}

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

// Write writes one message (the SDK and the inbox write each message whole) and then fires its watches.
func (h *hookWriter) Write(p []byte) (int, error) {
	out := acpinit.SpecLine(p)
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
