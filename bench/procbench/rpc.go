package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// message is one JSON-RPC 2.0 line in either direction.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// sessionUpdate is what procbench reads of a session/update notification's params: the session, and the tool
// call an update is about with its status and content.
type sessionUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		Kind       string          `json:"sessionUpdate"`
		ToolCallID string          `json:"toolCallId"`
		Status     string          `json:"status"`
		Content    json.RawMessage `json:"content"`
	} `json:"update"`
}

// reply is a response as it arrived, with the time it was read.
type reply struct {
	msg message
	at  time.Time
}

// editor is the client side of ACP over a child's stdio, as an editor runs it: requests with ids,
// notifications collected, the agent's permission questions answered "once".
type editor struct {
	wmu sync.Mutex
	w   io.Writer

	mu        sync.Mutex
	nextID    int
	pending   map[string]chan reply
	updates   []json.RawMessage // params of session/update notifications
	questions int               // session/request_permission requests answered
	readErr   error             // set when stdout carried something that is not JSON-RPC
	closed    bool
	// onUpdate, when set, gets each session/update's params instead of updates keeping them (a soak sends many).
	onUpdate func(params json.RawMessage)
}

func newEditor(w io.Writer) *editor {
	return &editor{w: w, pending: map[string]chan reply{}}
}

func (e *editor) write(m message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Method, err)
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if _, err := e.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s to garuda's stdin: %w", m.Method, err)
	}
	return nil
}

// send writes a request and returns the channel its response arrives on.
func (e *editor) send(method string, params any) (<-chan reply, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode %s params: %w", method, err)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, fmt.Errorf("send %s: garuda's stdout is closed", method)
	}
	e.nextID++
	id := json.RawMessage(fmt.Sprint(e.nextID))
	ch := make(chan reply, 1)
	e.pending[string(id)] = ch
	e.mu.Unlock()
	return ch, e.write(message{ID: id, Method: method, Params: p})
}

// notify writes a notification.
func (e *editor) notify(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s params: %w", method, err)
	}
	return e.write(message{Method: method, Params: p})
}

// await waits for a response until the deadline and decodes its result into out (may be nil).
func await(ctx context.Context, ch <-chan reply, method string, timeout time.Duration, out any) (time.Time, error) {
	select {
	case r, ok := <-ch:
		if !ok {
			return time.Time{}, fmt.Errorf("%s: garuda closed its stdout before answering", method)
		}
		if r.msg.Error != nil {
			return r.at, fmt.Errorf("%s: %w", method, r.msg.Error)
		}
		if out != nil {
			if err := json.Unmarshal(r.msg.Result, out); err != nil {
				return r.at, fmt.Errorf("%s: decode result %s: %w", method, r.msg.Result, err)
			}
		}
		return r.at, nil
	case <-time.After(timeout):
		return time.Time{}, fmt.Errorf("%s: no answer within %s", method, timeout)
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("%s: waiting for the answer: %w", method, ctx.Err())
	}
}

// read consumes garuda's stdout until EOF. Every line must be a JSON-RPC message.
func (e *editor) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		at := time.Now()
		if line = bytes.TrimSpace(line); len(line) > 0 {
			e.handle(line, at)
		}
		if err != nil {
			break
		}
	}
	e.mu.Lock()
	e.closed = true
	for id, ch := range e.pending {
		close(ch)
		delete(e.pending, id)
	}
	e.mu.Unlock()
}

func (e *editor) handle(line []byte, at time.Time) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		e.fail(fmt.Errorf("garuda wrote a line that is not JSON-RPC on stdout: %.200q", line))
		return
	}
	switch {
	case m.Method != "" && len(m.ID) > 0: // a request from the agent
		e.answer(m)
	case m.Method != "": // a notification
		if m.Method == "session/update" && e.onUpdate != nil {
			e.onUpdate(m.Params)
		} else if m.Method == "session/update" {
			e.mu.Lock()
			e.updates = append(e.updates, m.Params)
			e.mu.Unlock()
		}
	default: // a response to one of ours
		e.mu.Lock()
		ch := e.pending[string(m.ID)]
		delete(e.pending, string(m.ID))
		e.mu.Unlock()
		if ch == nil {
			e.fail(fmt.Errorf("garuda answered an id that was not asked: %s", m.ID))
			return
		}
		ch <- reply{msg: m, at: at}
	}
}

// answer replies to the agent's requests: permission questions are allowed once, anything else
// (fs/*, terminal/*: capabilities this editor does not offer) is "method not found".
func (e *editor) answer(m message) {
	if m.Method == "session/request_permission" {
		e.mu.Lock()
		e.questions++
		e.mu.Unlock()
		res, _ := json.Marshal(map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}})
		if err := e.write(message{ID: m.ID, Result: res}); err != nil {
			e.fail(err)
		}
		return
	}
	if err := e.write(message{ID: m.ID, Error: &rpcError{Code: -32601, Message: "method not found: " + m.Method}}); err != nil {
		e.fail(err)
	}
}

func (e *editor) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.readErr = errors.Join(e.readErr, err)
}

func (e *editor) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.readErr
}

// snapshot returns the session/update params received so far and the number of questions answered.
func (e *editor) snapshot() ([]json.RawMessage, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]json.RawMessage(nil), e.updates...), e.questions
}
