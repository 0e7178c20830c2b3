package runner

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

func TestNormHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "127.0.0.2": "127.0.0.2", "[::1]": "::1", "::ffff:127.0.0.2": "127.0.0.2",
		"http://example.com": "", "example.com:443": "", "*.example.com": "", "": "", "a..b": "", "[::1": "", "fe80::1%eth0": "",
	} {
		got, err := NormHost(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("NormHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Each flag answers only the questions the broker says are its own: by the server, host or consent kind the
// broker set from the request it decided, never by the title.
func TestCoveringFlag(t *testing.T) {
	all := Allow{Edits: true, Commands: true, MCP: []string{"tools"}, Hosts: []string{"example.com"}, WebSearch: true}
	for _, c := range []struct {
		name  string
		q     *execv1.Question
		allow Allow
		want  string
	}{
		{"mcp consent", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "mcp_server", Server: "tools"}, all, "--allow-mcp tools"},
		{"mcp tool", &execv1.Question{Kind: "mcp_tool", Server: "tools"}, all, "--allow-mcp tools"},
		{"another server", &execv1.Question{Kind: "mcp_tool", Server: "other", Title: "tools/echo"}, all, ""},
		{"host", &execv1.Question{Kind: "network", Host: "example.com"}, all, "--allow-host example.com"},
		{"another host", &execv1.Question{Kind: "network", Host: "api.example.com", Title: "example.com"}, all, ""},
		{"web search", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "web_search"}, all, "--allow-web-search"},
		{"web search, no flag", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "web_search"}, Allow{Edits: true}, ""},
		{"hook consent", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "hook", Title: "web_search"}, all, ""},
		{"a network question is not an edit", &execv1.Question{Kind: "network", Host: "other.org"}, all, ""},
		{"outside the sandbox", &execv1.Question{Kind: "command", OutsideSandbox: true}, all, ""},
	} {
		if got := coveringFlag(c.q, c.allow); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// lockedBuffer is a bytes.Buffer written by the run's goroutines and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tty is a terminal: what the user types, and what the run writes on it.
type tty struct {
	io.Reader
	io.Writer
}

// While a question waits on the terminal, the running call's elapsed time is not drawn: it would erase the line
// of the choices (found driving garuda run on a pty: "[1] Allow once … > " became "  … 2.4 s" within 200 ms).
func TestQuestionOnTheTerminalIsNotOverdrawn(t *testing.T) {
	typed, typing := io.Pipe()
	var stderr, onTTY lockedBuffer
	w := newOutput(Options{Stdout: io.Discard, Stderr: &stderr, Styled: true, TTY: tty{typed, &onTTY}})
	defer w.endLine()
	w.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: "s", Update: acp.StartToolCall("w1", "Write a.txt")})
	title := "Write a.txt"
	answered := make(chan acp.RequestPermissionResponse, 1)
	go func() {
		res, _ := w.RequestPermission(context.Background(), acp.RequestPermissionRequest{SessionId: "s",
			ToolCall: acp.ToolCallUpdate{ToolCallId: "w1", Title: &title},
			Options:  []acp.PermissionOption{{OptionId: "once", Name: "Allow once"}, {OptionId: "deny", Name: "Deny"}}})
		answered <- res
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(onTTY.String(), "> ") {
		if time.Now().After(deadline) {
			t.Fatalf("no question on the terminal: %q", onTTY.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	asked := len(stderr.String())
	time.Sleep(700 * time.Millisecond) // three of the status line's ticks
	if drawn := stderr.String()[asked:]; strings.Contains(drawn, "\r\x1b[K") {
		t.Errorf("the status line was drawn over the question while it waited: %q", drawn)
	}
	io.WriteString(typing, "2\n")
	if res := <-answered; res.Outcome.Selected == nil || res.Outcome.Selected.OptionId != "deny" {
		t.Fatalf("answer: %+v", res.Outcome)
	}
}
