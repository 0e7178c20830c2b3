package config

import (
	"strings"
	"testing"
)

// FuzzParseMCP checks the parser of mcp.json and .mcp.json: it never panics, an error names the file, and every
// server it accepts can be started or contacted: a stdio server has a command, an HTTP or SSE server an http(s) URL,
// and the hash a consent is pinned to is the same when the file is parsed again.
func FuzzParseMCP(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"files": {"command": "npx", "args": ["-y", "x"], "env": {"TOKEN": "sk-secret"}}}}`,
		`{"mcpServers": {"api": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer sk-secret"}}}}`,
		`{"mcpServers": {"ev": {"type": "sse", "url": "file:///etc/passwd"}}}`,
		`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`,
		`{"mcpServers": {"a b\u202e": {"command": "x", "env": {"K": 5}}}}`,
		`{"mcpServers": {"x": {"type": "http", "url": "https://h/", "headers": {"H": "sk-secret"}, "command": "y"}}}`,
	} {
		f.Add(s)
	}
	const path = "/p/.mcp.json"
	f.Fuzz(func(t *testing.T, data string) {
		servers, err := ParseMCP(path, []byte(data), MCPSourceProject)
		if err != nil {
			if !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("error %q does not start with the file's path", err)
			}
			return
		}
		again, _ := ParseMCP(path, []byte(data), MCPSourceProject)
		for i, s := range servers {
			switch s.Type {
			case MCPStdio:
				if s.Command == "" {
					t.Fatalf("stdio server %q without a command", s.Name)
				}
			case MCPHTTP, MCPSSE:
				if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
					t.Fatalf("%s server %q with URL %q", s.Type, s.Name, s.URL)
				}
			default:
				t.Fatalf("server %q of type %q", s.Name, s.Type)
			}
			if s.Hash() != again[i].Hash() {
				t.Fatalf("server %q hashes differently when parsed again", s.Name)
			}
		}
	})
}
