package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"
)

// ToolCall is one tool call of a scripted turn.
type ToolCall struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Input string `json:"input"` // JSON; streamed in pieces of ChunkSize bytes
}

// Turn is the scripted answer to one HTTP request.
type Turn struct {
	// Searches are web searches the provider runs itself (Anthropic's web_search), streamed first: each a
	// server_tool_use and its web_search_tool_result.
	Searches  []Search   `json:"searches,omitempty"`
	Thinking  string     `json:"thinking,omitempty"`
	Signature string     `json:"signature,omitempty"` // of the thinking block (Anthropic)
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// StopReason in Anthropic's words (end_turn, tool_use, max_tokens, refusal); empty: tool_use
	// when there are tool calls, else end_turn.
	StopReason string `json:"stop_reason,omitempty"`

	// Status, when set, answers with this HTTP status and an error body instead of a stream
	// (400, 401, 404, 429, 529, ...). Message is the error's message.
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// RetryAfter, with Status, is the retry-after header sent (seconds or an HTTP date); empty sends
	// retry-after-ms: 1, so that tests do not wait out real backoff.
	RetryAfter string `json:"retry_after,omitempty"`
	// Cut breaks the connection after the content, without the stream's end (a stream cut midway).
	Cut bool `json:"cut,omitempty"`
	// ErrorEvent, when set, ends the stream after the content with an error event of this type
	// (overloaded_error, api_error, ...) instead of the normal end.
	ErrorEvent string `json:"error_event,omitempty"`
	// Hang keeps the stream open after the content until the client goes away (cancel tests).
	Hang bool `json:"hang,omitempty"`
	// ChunkSize splits text, thinking and tool input into pieces of this many bytes (default 16).
	ChunkSize int `json:"chunk_size,omitempty"`
	// ChunkDelay is slept between events, to make a stream observable while it runs.
	ChunkDelay time.Duration `json:"chunk_delay,omitempty"`
}

// Search is one server-side web search of a scripted turn.
type Search struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	URLs  []string `json:"urls"` // each a result, with a title and encrypted content made from it
}

// Request is one request the server received.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Server is a running fake provider. Point an Anthropic client at URL, an OpenAI-compatible one
// at URL+"/v1".
type Server struct {
	URL string

	srv       *httptest.Server
	mu        sync.Mutex
	script    []Turn
	requests  []Request
	responder func(body []byte) Turn
}

// Serve starts a fake provider on addr ("" or "127.0.0.1:0" for any free port) that answers
// requests with the turns in order. It serves POST /v1/messages (Anthropic) and
// POST /v1/chat/completions (OpenAI). When the script runs out it answers 400.
func Serve(addr string, script []Turn) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fake provider: listen on %s: %w", addr, err)
	}
	s := &Server{script: append([]Turn(nil), script...)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	mux.HandleFunc("POST /v1/chat/completions", s.openai)
	mux.HandleFunc("POST /chat/completions", s.openai)
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

// Close stops the server and ends any open stream.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Respond makes the server answer each request with f(body) instead of the script, and stop keeping the requests
// (for long runs such as make soak, whose sessions each need the answer that fits their conversation).
func (s *Server) Respond(f func(body []byte) Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// next records the request and takes the next turn.
func (s *Server) next(r *http.Request) (Turn, []byte, bool) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.responder != nil {
		return s.responder(body), body, true
	}
	s.requests = append(s.requests, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	if len(s.script) == 0 {
		return Turn{}, body, false
	}
	t := s.script[0]
	s.script = s.script[1:]
	return t, body, true
}

func (t Turn) stop() string {
	switch {
	case t.StopReason != "":
		return t.StopReason
	case len(t.ToolCalls) > 0:
		return "tool_use"
	default:
		return "end_turn"
	}
}

// interrupt ends a stream the way t asks, before its end: it hangs until the client goes (and reports true), or it
// breaks the connection (no end of the stream, no clean end of the body). It returns false when t asks neither.
func (t Turn) interrupt(r *http.Request) bool {
	if t.Hang {
		<-r.Context().Done()
		return true
	}
	if t.Cut {
		panic(http.ErrAbortHandler)
	}
	return false
}

// messageOr is t's error message, or def, the provider's own wording, when the script gives none.
func (t Turn) messageOr(def string) string {
	if t.Message == "" {
		return def
	}
	return t.Message
}

func (t Turn) pieces(s string) []string {
	n := t.ChunkSize
	if n <= 0 {
		n = 16
	}
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// sse writes server-sent events and flushes each.
type sse struct {
	w     http.ResponseWriter
	f     http.Flusher
	delay time.Duration
	r     *http.Request
}

func (e *sse) event(name string, v any) {
	if e.delay > 0 {
		select {
		case <-time.After(e.delay):
		case <-e.r.Context().Done():
		}
	}
	data, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", data)
	e.f.Flush()
}

func tokens(b []byte) int { return len(b)/4 + 1 }

func writeError(w http.ResponseWriter, t Turn, body any) {
	w.Header().Set("Content-Type", "application/json")
	if t.RetryAfter != "" {
		w.Header().Set("retry-after", t.RetryAfter)
	} else {
		// Ask the client to retry at once: tests do not wait out real backoff.
		w.Header().Set("retry-after-ms", "1")
	}
	w.WriteHeader(t.Status)
	json.NewEncoder(w).Encode(body)
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	t, body, ok := s.next(r)
	if !ok {
		t = Turn{Status: 400, Message: "fake provider: no scripted turn left"}
	}
	if t.Status != 0 {
		writeError(w, t, map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(t.Status), "message": t.Message}})
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, f: w.(http.Flusher), delay: t.ChunkDelay, r: r}
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": tokens(body), "output_tokens": 1},
	}})
	out := 0
	idx := 0
	block := func(start map[string]any, deltas []map[string]any) {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": start})
		for _, d := range deltas {
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for i, sr := range t.Searches {
		id := sr.ID
		if id == "" {
			id = fmt.Sprintf("srvtoolu_fake_%d", i)
		}
		in, _ := json.Marshal(map[string]string{"query": sr.Query})
		block(map[string]any{"type": "server_tool_use", "id": id, "name": "web_search", "input": map[string]any{}},
			[]map[string]any{{"type": "input_json_delta", "partial_json": string(in)}})
		results := []any{}
		for j, u := range sr.URLs {
			results = append(results, map[string]any{"type": "web_search_result", "url": u, "title": fmt.Sprintf("Result %d", j+1),
				"encrypted_content": fmt.Sprintf("enc-%s-%d", id, j)})
		}
		block(map[string]any{"type": "web_search_tool_result", "tool_use_id": id, "content": results}, nil)
	}
	if t.Thinking != "" {
		var ds []map[string]any
		for _, p := range t.pieces(t.Thinking) {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": p})
		}
		sig := t.Signature
		if sig == "" {
			sig = "fake-signature"
		}
		ds = append(ds, map[string]any{"type": "signature_delta", "signature": sig})
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds)
		out += len(t.Thinking) / 4
	}
	if t.Text != "" {
		var ds []map[string]any
		for _, p := range t.pieces(t.Text) {
			ds = append(ds, map[string]any{"type": "text_delta", "text": p})
		}
		block(map[string]any{"type": "text", "text": ""}, ds)
		out += len(t.Text) / 4
	}
	for i, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake_%d", i)
		}
		var ds []map[string]any
		for _, p := range t.pieces(c.Input) {
			ds = append(ds, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		block(map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}, ds)
		out += len(c.Input) / 4
	}
	if t.interrupt(r) {
		return
	}
	if t.ErrorEvent != "" {
		e.event("error", map[string]any{"type": "error", "error": map[string]any{"type": t.ErrorEvent, "message": t.messageOr("Overloaded")}})
		return
	}
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": t.stop(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out + 1}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	t, body, ok := s.next(r)
	if !ok {
		t = Turn{Status: 400, Message: "fake provider: no scripted turn left"}
	}
	if t.Status != 0 {
		code := map[int]string{401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}[t.Status]
		writeError(w, t, map[string]any{"error": map[string]any{"message": t.Message, "type": "error", "code": code, "param": nil}})
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, f: w.(http.Flusher), delay: t.ChunkDelay, r: r}
	chunk := func(delta map[string]any, finish any) {
		e.event("", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	out := 0
	for _, p := range t.pieces(t.Thinking) {
		chunk(map[string]any{"reasoning_content": p}, nil)
	}
	for _, p := range t.pieces(t.Text) {
		chunk(map[string]any{"content": p}, nil)
	}
	out += (len(t.Thinking) + len(t.Text)) / 4
	for i, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_fake_%d", i)
		}
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": id, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, p := range t.pieces(c.Input) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)
		}
		out += len(c.Input) / 4
	}
	if t.interrupt(r) {
		return
	}
	if t.ErrorEvent != "" {
		e.event("", map[string]any{"error": map[string]any{"message": t.messageOr("The server is overloaded"), "type": t.ErrorEvent,
			"code": nil}})
		return
	}
	finish := map[string]string{"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}[t.stop()]
	chunk(map[string]any{}, finish)
	e.event("", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": req.Model,
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": tokens(body), "completion_tokens": out + 1,
			"total_tokens": tokens(body) + out + 1}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	e.f.Flush()
}

// LoadScript reads a script from a JSON file: a list of turns (chunk_delay in nanoseconds).
func LoadScript(path string) ([]Turn, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fake provider script: %w", err)
	}
	var turns []Turn
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&turns); err != nil {
		return nil, fmt.Errorf("fake provider script %s: %w", path, err)
	}
	return turns, nil
}

// Bodies returns the request bodies as strings, handy for asserting what the model heard.
func (s *Server) Bodies() []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, string(bytes.TrimSpace(r.Body)))
	}
	return out
}

// LastBodyContains reports whether the last request's body contains sub.
func (s *Server) LastBodyContains(sub string) bool {
	b := s.Bodies()
	return len(b) > 0 && strings.Contains(b[len(b)-1], sub)
}
