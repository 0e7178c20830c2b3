// Package mcptest is a small, real MCP server for tests: the test binary runs it as a stdio server (its TestMain
// calls Serve when os.Args[1] is Arg), or serves it over streamable HTTP with Handler. Some modes misbehave on
// purpose. It is imported by tests only.
package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Arg is the first argument with which a test binary runs as an MCP server: Arg, then the mode.
const Arg = "__garuda-test-mcp-server"

// Modes of Serve.
const (
	Good    = "good"    // the tools of NewServer
	Garbage = "garbage" // prints a line that is not JSON, then waits
	Silent  = "silent"  // reads and never answers
	Many    = "many"    // 10,000 tools, one with hidden characters, one with a bad schema
	Flood   = "flood"   // answers every tools/call with a 100 MB line of short texts
	// Probe speaks protocol 2025-06-18 and, once initialized, asks the client for roots/list,
	// sampling/createMessage and elicitation/create; its tool probe answers with what came back.
	Probe = "probe"
)

// Serve runs the server of mode on stdin and stdout until stdin ends; it returns the exit code.
func Serve(mode string) int {
	switch mode {
	case Good:
		if mark := os.Getenv("MCPTEST_MARK"); mark != "" {
			os.WriteFile(mark, []byte("started\n"), 0o644) // a test's proof that the server ran
		}
		if err := NewServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1
		}
		return 0
	case Garbage:
		fmt.Println("hello, this is not JSON-RPC")
		select {}
	case Silent:
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				return 0
			}
		}
	case Many, Flood, Probe:
		return raw(mode)
	}
	fmt.Fprintln(os.Stderr, "mcptest: unknown mode", mode)
	return 2
}

type textIn struct {
	Text string `json:"text"`
}
type bytesIn struct {
	Bytes int `json:"bytes"`
}
type pathIn struct {
	Path string `json:"path"`
}
type addrIn struct {
	Addr string `json:"addr"`
}
type empty struct{}
type secsIn struct {
	Secs string `json:"secs"`
}
type sleepIn struct {
	Secs string `json:"secs,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func failure(s string) *mcp.CallToolResult {
	r := text(s)
	r.IsError = true
	return r
}

// NewServer is the well-behaved server: echo, big, image, write, dial, sleep, spawn, sh, crash, grow.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	// echo claims to only read (readOnlyHint): a claim that must loosen no decision.
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text.", Annotations: readOnly}, func(_ context.Context,
		_ *mcp.CallToolRequest,
		in textIn) (*mcp.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Answer with this many bytes."}, func(_ context.Context,
		_ *mcp.CallToolRequest, in bytesIn) (*mcp.CallToolResult, any, error) {
		return text("BEGIN" + strings.Repeat("x", in.Bytes) + "END"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Answer with an image."}, func(_ context.Context, _ *mcp.CallToolRequest,
		_ empty) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a picture:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG....")}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "write", Description: "Write a file."}, func(_ context.Context, _ *mcp.CallToolRequest,
		in pathIn) (*mcp.CallToolResult, any, error) {
		if err := os.WriteFile(in.Path, []byte("planted by an MCP server\n"), 0o644); err != nil {
			return failure("write failed: " + err.Error()), nil, nil
		}
		return text("wrote " + in.Path), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "dial", Description: "Open a TCP connection."}, func(_ context.Context, _ *mcp.CallToolRequest,
		in addrIn) (*mcp.CallToolResult, any, error) {
		c, err := net.DialTimeout("tcp", in.Addr, 5*time.Second)
		if err != nil {
			return failure("dial failed: " + err.Error()), nil, nil
		}
		c.Close()
		return text("connected to " + in.Addr), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Wait until cancelled, with `sleep secs` running when secs is given; " +
		"then end it and leave a file 'cancelled' in the working folder."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			if in.Secs != "" {
				// Ended with the call's context: what a well-behaved server does on notifications/cancelled.
				cmd := exec.CommandContext(ctx, "sleep", in.Secs)
				if err := cmd.Start(); err != nil {
					return failure(err.Error()), nil, nil
				}
				defer cmd.Wait()
			}
			<-ctx.Done()
			os.WriteFile("cancelled", []byte("notifications/cancelled arrived\n"), 0o644)
			return text("cancelled"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Start `sleep secs` in a new session, trying to outlive the server."},
		func(_ context.Context, _ *mcp.CallToolRequest, in secsIn) (*mcp.CallToolResult, any, error) {
			cmd := exec.Command("sleep", in.Secs)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				return failure(err.Error()), nil, nil
			}
			wd, _ := os.Getwd()
			// The pid as the host sees it cannot be known from inside a pid namespace: leave a marker in its
			// command line instead (the test looks for the process by it).
			return text(fmt.Sprintf("started %d in %s", cmd.Process.Pid, filepath.Base(wd))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sh", Description: "Run a shell command in the working folder; what it prints is the answer."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			out, err := exec.Command("sh", "-c", in.Text).CombinedOutput()
			if err != nil {
				return failure(fmt.Sprintf("%s: %v", out, err)), nil, nil
			}
			return text(string(out)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit in the middle of the call."}, func(_ context.Context,
		_ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add the tool 'added'."}, func(_ context.Context, _ *mcp.CallToolRequest,
		_ empty) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: "added", Description: "Added later."}, func(_ context.Context, _ *mcp.CallToolRequest,
			_ empty) (*mcp.CallToolResult, any, error) {
			return text("added works"), nil, nil
		})
		// The SDK sends tools/list_changed 10 ms after the change: the answer waits for it, as a server does that
		// says its tools changed before it answers.
		time.Sleep(50 * time.Millisecond)
		return text("grown"), nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "mem://notes", Name: "notes", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "the notes of the server"}}}, nil
		})
	// A resource and a prompt that are never answered (until the request is cancelled).
	s.AddResource(&mcp.Resource{URI: "mem://wait", Name: "wait", MIMEType: "text/plain"},
		func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddPrompt(&mcp.Prompt{Name: "wait", Description: "Never answered."},
		func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddPrompt(&mcp.Prompt{Name: "review", Description: "Review a topic.", Arguments: []*mcp.PromptArgument{{Name: "topic"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Please review " + req.Params.Arguments["topic"] + " carefully."}}}}, nil
		})
	return s
}

// Handler serves NewServer over streamable HTTP; with token set, a request without "Authorization: Bearer
// <token>" gets 401.
func Handler(token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return NewServer() }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// SSEHandler serves NewServer over the older HTTP+SSE transport.
func SSEHandler() http.Handler {
	return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return NewServer() }, nil)
}

// raw answers JSON-RPC by hand, for what the SDK's server would not send.
func raw(mode string) int {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	answers := map[string]json.RawMessage{} // the client's answers to the probe's requests
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil {
			continue
		}
		if mode == Probe && req.Method == "notifications/initialized" {
			for _, r := range []string{`{"jsonrpc":"2.0","id":"roots","method":"roots/list"}`,
				`{"jsonrpc":"2.0","id":"sampling","method":"sampling/createMessage","params":{"maxTokens":5,"messages":[]}}`,
				`{"jsonrpc":"2.0","id":"elicitation","method":"elicitation/create",` +
					`"params":{"message":"password?","requestedSchema":{"type":"object"}}}`} {
				out.WriteString(r + "\n")
			}
			out.Flush()
			continue
		}
		if req.Method == "" {
			var id string
			if json.Unmarshal(req.ID, &id) == nil {
				answers[id] = append(json.RawMessage(nil), line...)
			}
			continue
		}
		if req.ID == nil {
			continue
		}
		var result any
		switch req.Method {
		case "initialize":
			version := req.Params.ProtocolVersion
			if mode == Probe {
				version = "2025-06-18"
			}
			result = map[string]any{"protocolVersion": version, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "raw", "version": "1"}}
		case "tools/list":
			obj := map[string]any{"type": "object"}
			tools := []map[string]any{
				{"name": "hid\u200bden\u202e", "description": "Looks \u202eharmless\u200b.", "inputSchema": obj},
				{"name": "badschema", "description": "x", "inputSchema": map[string]any{"type": "string"}},
			}
			if mode == Probe {
				tools = []map[string]any{{"name": "probe", "inputSchema": obj}}
			}
			for i := range 10000*btoi(mode == Many) + btoi(mode == Flood) {
				tools = append(tools, map[string]any{"name": fmt.Sprintf("t%05d", i), "inputSchema": obj})
			}
			result = map[string]any{"tools": tools}
		case "tools/call":
			if mode == Flood {
				// 100 MB in 100,000 short texts: no one text is long enough to be cut, the message is too large.
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[`, req.ID)
				block := `{"type":"text","text":"` + strings.Repeat("y", 1000) + `"}`
				for i := range 100_000 {
					if i > 0 {
						out.WriteByte(',')
					}
					out.WriteString(block)
				}
				out.WriteString("]}}\n")
				out.Flush()
				continue
			}
			b, _ := json.Marshal(answers)
			result = map[string]any{"content": []map[string]any{{"type": "text", "text": string(b)}}}
		default:
			result = map[string]any{}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		out.Write(append(b, '\n'))
		out.Flush()
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
