package acpinit_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/frontend/acpagent"
	"github.com/garuda-dev/garuda/frontend/acpagent/acpinit"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// out records what the early answer writes, and whether it was closed.
type out struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

func (o *out) Write(p []byte) (int, error) { o.mu.Lock(); defer o.mu.Unlock(); return o.buf.Write(p) }
func (o *out) Close() error                { o.mu.Lock(); defer o.mu.Unlock(); o.closed = true; return nil }
func (o *out) String() string              { o.mu.Lock(); defer o.mu.Unlock(); return o.buf.String() }

// sdkAnswer is the line garuda acp's server writes, through the SDK, for the editor's line.
func sdkAnswer(t *testing.T, line string) string {
	t.Helper()
	in, inw := io.Pipe()
	outr, outw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- acpagent.Serve(context.Background(), in, outw, acpagent.Options{
			Broker: execv1.NewExecServiceClient(nil), BrokerDone: make(chan struct{}), Version: "9.9",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		outw.Close()
	}()
	go inw.Write([]byte(line))
	got := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(outr).ReadString('\n')
		got <- l
		io.Copy(io.Discard, outr)
	}()
	select {
	case l := <-got:
		inw.Close()
		<-served
		return l
	case <-time.After(10 * time.Second):
		t.Fatalf("the SDK did not answer %q", line)
		return ""
	}
}

const next = `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/p","mcpServers":[]}}` + "\n"

// An initialize the SDK would answer is answered here with the SDK's very line (the spec's capabilities, Terminal
// Auth by either of the editor's two ways of saying so, the id as the editor wrote it), and what follows it in the
// input is handed on byte for byte.
func TestEarlyAnswerIsTheSDKs(t *testing.T) {
	for name, line := range map[string]string{
		"plain":              `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		"auth.terminal":      `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true},"fs":{"readTextFile":true}}}}`,
		"meta terminal-auth": `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"terminal-auth":true}}}}`,
		"string id, spaces":  `{ "jsonrpc" : "2.0", "id" : "a b" , "method":"initialize","params":{ "protocolVersion" : 1, "clientInfo":{"name":"zed","version":"1"}}}`,
		"newer client":       `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":2,"unknown":{"x":1}}}`,
		"CRLF":               `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\r",
	} {
		t.Run(name, func(t *testing.T) {
			want := sdkAnswer(t, line+"\n")
			o := &out{}
			in := line + "\n" + next
			e := acpinit.Start(strings.NewReader(in), o, "9.9", len(in))
			if !e.Answered() {
				t.Fatalf("not answered; the SDK answers %s", want)
			}
			if got := o.String(); got != want {
				t.Errorf("answered\n%s\nthe SDK answers\n%s", got, want)
			}
			if !o.closed {
				t.Error("the answer's output was not closed")
			}
			if rest, _ := io.ReadAll(e); string(rest) != next {
				t.Errorf("handed on %q, want %q", rest, next)
			}
		})
	}
}

// Any other first line is the SDK's: nothing is written, and the whole input is handed on byte for byte (so the SDK
// answers, or refuses, exactly as it would have).
func TestEarlyHandsOnWhatItDoesNotAnswer(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"_meta":{"x":"` +
		strings.Repeat("a", 70<<10) + `"}}}` + "\n"
	for name, in := range map[string]string{
		"a notification":       `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1}}` + "\n",
		"a null id":            `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
		"an object id":         `{"jsonrpc":"2.0","id":{"k": [1, 2]},"method":"initialize","params":{"protocolVersion":1}}` + "\n",
		"no params":            `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n",
		"params the SDK fails": `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"one"}}` + "\n",
		"another method":       next,
		"not JSON":             "initialize please\n" + next,
		"a blank line first":   "\n" + `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
		"cut by the end":       `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		"over the bound":       long + next,
		"nothing":              "",
	} {
		t.Run(name, func(t *testing.T) {
			o := &out{}
			e := acpinit.Start(strings.NewReader(in), o, "9.9", len(in))
			if e.Answered() {
				t.Fatalf("answered %s", o.String())
			}
			if o.String() != "" || !o.closed {
				t.Errorf("wrote %q (closed %v), want nothing and closed", o.String(), o.closed)
			}
			if rest, err := io.ReadAll(e); string(rest) != in || err != nil {
				t.Errorf("handed on %d bytes (%v), want the %d of the input", len(rest), err, len(in))
			}
		})
	}
}

// An initialize already in the input when garuda acp starts is answered before start returns (that is the point:
// the answer does not wait for the package initialisation to go on); one that comes later, in pieces, is answered
// in the background once its line is whole.
func TestEarlyAnswersAtOnceOrWhenTheLineIsWhole(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"
	o := &out{}
	acpinit.Start(strings.NewReader(line), o, "9.9", len(line))
	if !strings.Contains(o.String(), `"id":1,"result"`) {
		t.Fatalf("a line already there was not answered at once: %q", o.String())
	}

	r, w := io.Pipe()
	o = &out{}
	e := acpinit.Start(r, o, "9.9", 0)
	w.Write([]byte(line[:20]))
	w.Write([]byte(line[20:] + next[:10]))
	if !e.Answered() || !strings.Contains(o.String(), `"id":1,"result"`) {
		t.Fatalf("a line in pieces: answered %q", o.String())
	}
	go func() { w.Write([]byte(next[10:])); w.Close() }()
	if rest, _ := io.ReadAll(e); string(rest) != next {
		t.Errorf("handed on %q, want %q", rest, next)
	}
}
