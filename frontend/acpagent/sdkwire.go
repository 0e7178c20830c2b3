package acpagent

// The ACP SDK (github.com/coder/acp-go-sdk v0.13.0, the only version the Go module proxy serves) is worked around at
// the byte level in three places, all in this file, so that they can go together when the SDK allows:
//
//  1. inbox, the protocol input: it notes the order of a session's prompts and cancels (the SDK runs each request
//     in a goroutine of its own), and answers a line over the SDK's 10 MiB limit or one that is not JSON-RPC with an
//     error (the SDK would close the connection, ending every session, or log the whole line and answer nothing).
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

// next reads the next line for the SDK, noting the prompts and cancels in it; a line over maxLine, or one that is not
// JSON, is answered here.
func (in *inbox) next() ([]byte, error) {
	for {
		line, ids, tooLong, err := in.readLine()
		switch {
		case !tooLong && !malformed(line):
			if in.srv.noteMessage(line) {
				return line, err
			}
			// The SDK would log the whole line and answer nothing (a method that is not a string), or run the
			// request and answer it with an id that is no JSON-RPC id (an object).
			in.srv.opts.Log.Warn("a message that is not JSON-RPC was dropped", "bytes", len(line), "head", logHead(line))
			in.srv.answerDropped(orNull(scanIDs(line)), -32600, "Invalid Request", "the message is not a JSON-RPC 2.0 "+
				"request, notification or response: its id must be a string or a number, its method a string")
		case !tooLong:
			// The SDK would log the whole line (5 MB of garbage is 5 MB in the editor's log) and answer nothing.
			in.srv.opts.Log.Warn("a line that is not JSON was dropped", "bytes", len(line), "head", logHead(line))
			code, message := -32700, "Parse error"
			if json.Valid(line) {
				code, message = -32600, "Invalid Request" // a batch: ACP has none
			}
			in.srv.answerDropped(orNull(scanIDs(line)), code, message, "the line is not one JSON-RPC message: "+
				"send each message as one JSON object in UTF-8 on a line of its own")
		default:
			in.srv.opts.Log.Warn("a message over the size limit was not read", "limit", maxLine, "ids", fmt.Sprint(ids))
			in.srv.answerDropped(ids, -32602, "", fmt.Sprintf("the message is too large: Garuda reads at most %d MiB "+
				"per message; send a smaller selection, or link the file instead of embedding it", maxLine>>20))
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine reads one line, its newline included. Of a line over maxLine only the head is kept, tooLong is set, and
// ids are the ids of the requests in it, wherever they stand (an editor may write "id" after "params").
func (in *inbox) readLine() (line []byte, ids []json.RawMessage, tooLong bool, err error) {
	var sc idScanner
	for {
		frag, e := in.r.ReadSlice('\n')
		if !tooLong && len(line)+len(frag) > maxLine {
			tooLong = true
			sc.feed(line)
			line = line[:min(len(line), headSize)]
		}
		if tooLong {
			sc.feed(frag)
			frag = frag[:min(len(frag), headSize-len(line))]
		}
		line = append(line, frag...)
		if e != bufio.ErrBufferFull {
			if tooLong {
				ids = sc.requests()
			}
			return line, ids, tooLong, e
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

// malformed reports a line with content that is not one JSON object: not JSON, two messages, or a batch (which ACP
// does not have, and whose line the SDK would log whole).
func malformed(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && (t[0] != '{' || !json.Valid(t))
}

// orNull is ids, or the one id null when there are none: JSON-RPC answers a line whose request id cannot be told
// (a parse error, an invalid request) with id null.
func orNull(ids []json.RawMessage) []json.RawMessage {
	if len(ids) == 0 {
		return []json.RawMessage{json.RawMessage("null")}
	}
	return ids
}

// noteMessage tells a session that a prompt or a cancel of it was read. It decodes and checks the message as the SDK
// does before it runs the handler, so exactly the prompts that reach Prompt are counted. It reports false for a
// message the SDK must not be given: one it cannot decode (it would log the line whole), or a request whose id is
// neither a string nor a number (it would run it, and answer with that id).
func (s *server) noteMessage(line []byte) bool {
	if len(bytes.TrimSpace(line)) == 0 {
		return true // the SDK skips a blank line (and the input's end reads as one)
	}
	var m acpinit.Message // as the SDK reads it first, to classify a line as it does
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	if m.ID != nil && m.Method != "" && !acpinit.ValidID(*m.ID) {
		return false
	}
	switch {
	case m.Method == acp.AgentMethodSessionPrompt && m.ID != nil:
		var p acp.PromptRequest
		if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
			return true
		}
		if sess, err := s.lookup(p.SessionId); err == nil {
			sess.promptRead()
		}
	case m.Method == acp.AgentMethodSessionCancel && m.ID == nil:
		var p acp.CancelNotification
		if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
			return true
		}
		if sess, err := s.lookup(p.SessionId); err == nil {
			sess.cancelRead()
		}
	}
	return true
}

// answerDropped answers each request of a line the SDK is not given with an error, so that the editor does not wait
// for an answer forever. A line's responses and notifications get none: a response's id is the agent's, and an
// error with it would answer the editor's own request of the same id; a line with no request the caller can find
// gets one error with id null (orNull), as JSON-RPC asks.
func (s *server) answerDropped(ids []json.RawMessage, code int, message, detail string) {
	for _, id := range ids {
		if message == "" {
			message = detail
		}
		resp, err := json.Marshal(struct {
			JSONRPC string            `json:"jsonrpc"`
			ID      json.RawMessage   `json:"id"`
			Error   *acp.RequestError `json:"error"`
		}{"2.0", id, &acp.RequestError{Code: code, Message: message, Data: map[string]any{"error": detail}}})
		if err != nil {
			continue
		}
		if _, err := s.out.Write(append(resp, '\n')); err != nil {
			s.opts.Log.Debug("answer a message that was not read", "err", err)
		}
	}
}

// scanIDs is the ids of the requests in a line.
func scanIDs(line []byte) []json.RawMessage {
	var sc idScanner
	sc.feed(line)
	return sc.requests()
}

// idScanner finds the "id" of each JSON object in a line fed to it in pieces, wherever the member stands, without
// keeping the line: an over-long line is read in pieces, and an editor may write "id" after a huge "params" (Lua
// tables, as CodeCompanion's, have no key order). Bytes between objects are skipped, so that the id of a request
// on a line with garbage or a second message is found too.
type idScanner struct {
	depth       int
	inStr, esc  bool
	keyNext     bool   // the next string at depth 1 is a key
	inKey       bool   // reading a key at depth 1
	key         []byte // the key being read (its first bytes)
	member      string // the last key read at depth 1
	capturing   bool   // reading the value of "id"
	val         []byte
	id          json.RawMessage // of the object being read
	hasMethod   bool            // the object being read has a "method": a request or a notification
	found       []json.RawMessage
	overflowVal bool
}

// maxIDSize bounds an id the scanner keeps; a longer one is not answered.
const maxIDSize = 1024

func (sc *idScanner) feed(p []byte) {
	for _, c := range p {
		if sc.capturing {
			if sc.depth == 1 && !sc.inStr && (c == ',' || c == '}') {
				sc.endValue()
			} else if len(sc.val) < maxIDSize {
				sc.val = append(sc.val, c)
			} else {
				sc.overflowVal = true
			}
		}
		if sc.inStr {
			switch {
			case sc.esc:
				sc.esc = false
			case c == '\\':
				sc.esc = true
			case c == '"':
				sc.inStr = false
				if sc.inKey {
					sc.inKey, sc.member = false, string(sc.key)
				}
				continue
			}
			if sc.inKey && len(sc.key) < 8 {
				sc.key = append(sc.key, c)
			}
			continue
		}
		switch c {
		case '"':
			if sc.depth == 0 {
				continue
			}
			sc.inStr = true
			if sc.depth == 1 && sc.keyNext {
				sc.inKey, sc.keyNext, sc.key = true, false, sc.key[:0]
			}
		case '{', '[':
			if sc.depth == 0 && c == '[' {
				continue
			}
			sc.depth++
			if sc.depth == 1 {
				sc.keyNext, sc.id, sc.hasMethod = true, nil, false
			}
		case '}', ']':
			if sc.depth == 0 {
				continue
			}
			sc.depth--
			if sc.depth == 0 && sc.id != nil && sc.hasMethod && string(sc.id) != "null" {
				sc.found = append(sc.found, sc.id)
			}
		case ':':
			if sc.depth == 1 {
				switch sc.member {
				case "id":
					sc.capturing, sc.val, sc.overflowVal = true, sc.val[:0], false
				case "method":
					sc.hasMethod = true
				}
			}
		case ',':
			if sc.depth == 1 {
				sc.keyNext = true
			}
		}
	}
}

// endValue ends the value of "id": kept if it is one JSON value.
func (sc *idScanner) endValue() {
	sc.capturing = false
	v := bytes.TrimSpace(sc.val)
	if !sc.overflowVal && json.Valid(v) && len(v) > 0 && v[0] != '{' && v[0] != '[' {
		sc.id = append(json.RawMessage(nil), v...)
	}
}

// requests is the ids of the requests read whole: objects with a "method" and a non-null "id".
func (sc *idScanner) requests() []json.RawMessage { return sc.found }

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
