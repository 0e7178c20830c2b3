package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeOpenAI is an OpenAI-compatible model server: it answers chat-completion requests with scripted streams, in
// order, and keeps the bodies it was sent.
type fakeOpenAI struct {
	mu      sync.Mutex
	answers [][]string // each answer: the JSON chunks of one stream
	bodies  []string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	var chunks []string
	if len(f.answers) > 0 {
		chunks, f.answers = f.answers[0], f.answers[1:]
	}
	f.mu.Unlock()
	if chunks == nil {
		http.Error(w, `{"error":{"message":"no scripted answer"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// modelsJSON serves f on 127.0.0.1 for the test and returns a models.json whose default model "fake" it serves,
// its key in LOCAL_API_KEY.
func (f *fakeOpenAI) modelsJSON(t testing.TB) string {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return fmt.Sprintf(`{"default":"fake","providers":{"local":{"type":"openai","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},`+
		`"models":{"fake":{"provider":"local","id":"fake-model"}}}`, srv.URL+"/v1")
}

// lastBody is the body of the newest request.
func (f *fakeOpenAI) lastBody() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

func chunk(delta string, finish string) string {
	fin := "null"
	if finish != "" {
		fin = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake-model","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, fin)
}

func textAnswer(text string) []string {
	return []string{chunk(fmt.Sprintf(`{"role":"assistant","content":%q}`, text), ""), chunk(`{}`, "stop")}
}

// toolAnswer is a model's answer that calls the tool name with args (JSON).
func toolAnswer(id, name, args string) []string {
	return []string{
		chunk(fmt.Sprintf(`{"role":"assistant","tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}`,
			id, name, args), ""),
		chunk(`{}`, "tool_calls"),
	}
}

func bashAnswer(id, command string) []string {
	args, _ := json.Marshal(map[string]string{"command": command})
	return toolAnswer(id, "bash", string(args))
}

func processAnswer(id string, input map[string]any) []string {
	args, _ := json.Marshal(input)
	return toolAnswer(id, "process_manager", string(args))
}
