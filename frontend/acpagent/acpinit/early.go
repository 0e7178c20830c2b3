package acpinit

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/signal"

	acp "github.com/coder/acp-go-sdk"
)

// Early is the editor's input of `garuda acp` as read from the package initialisation: its first line, answered
// there when it is an initialize the SDK would answer, and the rest, which Read hands on.
type Early struct {
	in      io.Reader
	out     io.WriteCloser
	version string
	done    chan struct{}
	sig     chan os.Signal // SIGTERM and SIGINT, caught from the initialisation until main catches them

	// Set before done closes.
	answered bool
	rest     []byte // read and not answered: handed on first, byte for byte
	err      error  // the error that ended the reads of the first line (io.EOF), after rest
}

var early *Early

// Take returns the input read at initialisation, once, or nil when none was: garuda acp reads through it instead of
// os.Stdin.
func Take() *Early {
	e := early
	early = nil
	return e
}

// maxFirst bounds the first line read here; a longer one (no editor's initialize is) is the SDK's to read.
const maxFirst = 64 << 10

// start answers the first line of in on out, then closes out. When ready bytes of in can be read without waiting
// and hold the whole line (an editor writes initialize as it starts the agent), it is answered before start
// returns; else in the background, as the rest of the line comes.
func start(in io.Reader, out io.WriteCloser, version string, ready int) *Early {
	e := &Early{in: in, out: out, version: version, done: make(chan struct{})}
	if ready > 0 {
		e.read(ready)
		if e.first() {
			return e
		}
	}
	go func() {
		for !e.first() {
			e.read(0)
		}
	}()
	return e
}

// read reads once into rest: at least n bytes of room (the bytes known to be there), else the room left, grown
// when there is none; never past maxFirst, which first checks before asking for more.
func (e *Early) read(n int) {
	n = min(max(n, cap(e.rest)-len(e.rest), 4096), maxFirst-len(e.rest))
	if cap(e.rest)-len(e.rest) < n {
		e.rest = append(e.rest, make([]byte, n)...)[:len(e.rest)]
	}
	m, err := e.in.Read(e.rest[len(e.rest) : len(e.rest)+n])
	e.rest, e.err = e.rest[:len(e.rest)+m], err
}

// first answers the first line if rest holds it all, and reports whether the first line is dealt with: answered,
// or found to be the SDK's (not an initialize, too long, or cut by the end of the input).
func (e *Early) first() bool {
	i := bytes.IndexByte(e.rest, '\n')
	if i < 0 && e.err == nil && len(e.rest) < maxFirst {
		return false
	}
	if i >= 0 {
		if resp, ok := answer(e.rest[:i+1], e.version); ok {
			e.out.Write(resp) // as the SDK does, a failed write is not retried: the editor is gone
			e.answered, e.rest = true, e.rest[i+1:]
		}
	}
	e.out.Close()
	close(e.done)
	return true
}

// Answered returns, once the first line is read, whether it was answered here.
func (e *Early) Answered() bool {
	<-e.done
	return e.answered
}

// Read reads the editor's input after the line answered here: what was read and not answered, then the rest.
func (e *Early) Read(p []byte) (int, error) {
	<-e.done
	if len(e.rest) > 0 {
		n := copy(p, e.rest)
		e.rest = e.rest[n:]
		return n, nil
	}
	if e.err != nil {
		return 0, e.err
	}
	return e.in.Read(p)
}

// Caught stops catching SIGTERM and SIGINT here (main catches them by now) and reports whether one came before.
func (e *Early) Caught() bool {
	if e.sig == nil {
		return false
	}
	signal.Stop(e.sig)
	select {
	case <-e.sig:
		return true
	default:
		return false
	}
}

// Message is the SDK's JSON-RPC message (its anyMessage, field for field), so that a line decodes and an answer
// encodes as there; the inbox of package acpagent classifies lines with it too.
type Message struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      *json.RawMessage  `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Params  json.RawMessage   `json:"params,omitempty"`
	Result  json.RawMessage   `json:"result,omitempty"`
	Error   *acp.RequestError `json:"error,omitempty"`
}

// ValidID reports whether a request's id is a string or a number, as JSON-RPC asks. The SDK runs a request with an
// object or an array for its id and answers with it; garuda acp answers such a request -32600 with id null instead.
func ValidID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

// IsInitialize reports whether a line is an initialize request, as the SDK decodes it.
func IsInitialize(line []byte) bool {
	var m Message
	return json.Unmarshal(line, &m) == nil && m.Method == acp.AgentMethodInitialize && m.ID != nil
}

// answer is the line the SDK and the server write for a line that is an initialize request, checked as they check
// it (decoded as the SDK's message, then its params as its InitializeRequest); ok is false for any other line,
// which is then the SDK's.
func answer(line []byte, version string) ([]byte, bool) {
	var m Message
	if json.Unmarshal(line, &m) != nil || m.Method != acp.AgentMethodInitialize || m.ID == nil || !ValidID(*m.ID) {
		return nil, false
	}
	var p acp.InitializeRequest
	if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
		return nil, false
	}
	res, err := json.Marshal(any(Answer(p, version)))
	if err != nil {
		return nil, false
	}
	b, err := json.Marshal(Message{JSONRPC: "2.0", ID: m.ID, Result: res})
	if err != nil {
		return nil, false
	}
	return SpecLine(append(b, '\n')), true
}
