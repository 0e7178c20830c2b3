package config

import (
	"strings"
	"testing"
)

func TestParseMCPServers(t *testing.T) {
	data := []byte(`{
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "server x"], "env": {"TOKEN": "s3cret"}},
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
  }
}`)
	srvs, err := ParseMCP("/p/.mcp.json", data, MCPSourceProject)
	if err != nil {
		t.Fatal(err)
	}
	if len(srvs) != 3 {
		t.Fatalf("got %d servers", len(srvs))
	}
	f := srvs[0]
	if f.Name != "files" || f.Type != MCPStdio || f.Line != 3 || f.CommandLine() != "npx -y 'server x'" || f.EnvNames()[0] != "TOKEN" {
		t.Errorf("files: %+v %q", f, f.CommandLine())
	}
	if f.Where() != "/p/.mcp.json:3" {
		t.Errorf("where: %s", f.Where())
	}
	if srvs[1].Type != MCPHTTP || srvs[1].Headers["Authorization"] != "Bearer t" || srvs[2].Type != MCPSSE {
		t.Errorf("remote: %+v", srvs[1:])
	}
	// A changed definition (here a variable's value) is another hash: its consent asks again.
	g := f
	g.Env = map[string]string{"TOKEN": "other"}
	if f.Hash() == g.Hash() || f.Hash() != srvs[0].Hash() {
		t.Error("the hash does not pin the definition")
	}
}

func TestParseMCPErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"{\n\"mcpServers\": {\n\"a\": {\"command\": \"x\",}\n}}", "line 3"},
		{"{\n\"mcpServers\": {\n\"a\": {\"comand\": \"x\"}}}", `line 3: server "a": unknown key "comand"`},
		{"{\"mcpServers\": {\n\"a\": {\"type\": \"http\", \"url\": \"file:///etc\"}}}", "not an http or https address"},
		{"{\"mcpServers\": {\n\"a\": {\"args\": [\"x\"]}}}", "needs a command"},
		{"{\"mcpServers\": {\n\"a b\": {\"command\": \"x\"}}}", "may hold only"},
		{"{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": {\"command\": \"y\"}}}", `duplicate key "a" in "mcpServers"`},
		{"{\"servers\": {}}", "unknown key"},
		// What no request or exec could carry is refused here, before its consent is asked.
		{"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"X\\nY\": \"v\"}}}}", `header "X\nY" is not a header name`},
		{"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"A\": \"v\\r\\nB: 1\"}}}}",
			`header "A": its value holds a line break`},
		{"{\"mcpServers\": {\"a\": {\"command\": \"x\\u0000y\"}}}", "command holds a NUL character"},
		{"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"a\\u0000\"]}}}", "args hold a NUL character"},
		{"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": \"\\u0000\"}}}}", `env: the value of "K" holds a NUL character`},
	} {
		_, err := ParseMCP("/p/.mcp.json", []byte(tc.data), MCPSourceProject)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/p/.mcp.json: line") {
			t.Errorf("%q: got %v, want %q", tc.data, err, tc.want)
		}
	}
}
