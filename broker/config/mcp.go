package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/garuda-dev/garuda/internal/strictjson"
)

// Where an MCP server is configured.
const (
	MCPSourceUser    = "user"    // $GARUDA_HOME/mcp.json: the user's own, trusted as their config
	MCPSourceProject = "project" // the project's .mcp.json or .garuda/mcp.json: needs consent
	MCPSourceEditor  = "editor"  // the editor's mcpServers of session/new or load: needs consent
)

// Transports of an MCP server.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
	MCPSSE   = "sse"
)

// MCPServer is one MCP server of a configuration: a program to run (stdio) or an address to connect to.
type MCPServer struct {
	Name    string // its key in mcpServers
	Source  string // MCPSource*
	File    string // the file it is configured in ("the editor" for the editor's)
	Line    int    // its line in File (0 for the editor's)
	Type    string // MCPStdio, MCPHTTP or MCPSSE
	Command string
	Args    []string
	Env     map[string]string // values may be secrets: never shown, logged or audited
	URL     string
	Headers map[string]string // values may be tokens: they stay in the broker
}

// EnvNames are the names of Env, sorted: what a question may show.
func (s *MCPServer) EnvNames() []string { return sortedKeys(s.Env) }

// HeaderNames are the names of Headers, sorted.
func (s *MCPServer) HeaderNames() []string { return sortedKeys(s.Headers) }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Hash pins the definition for a consent: the transport, command, args, env, URL and headers, values included (a
// changed token or variable is a changed server), so that any change to what runs or is contacted asks again.
func (s *MCPServer) Hash() string {
	b, _ := json.Marshal(struct {
		Type, Command, URL string
		Args               []string
		Env, Headers       map[string]string
	}{s.Type, s.Command, s.URL, s.Args, s.Env, s.Headers}) // encoding/json sorts map keys
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Where says where the server is configured, for a question or a notice.
func (s *MCPServer) Where() string {
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	return s.File
}

// CommandLine is the stdio server's command and args, each quoted as a shell would need: what runs.
func (s *MCPServer) CommandLine() string {
	words := append([]string{s.Command}, s.Args...)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// shellQuote quotes w for bash when it holds anything but plain characters.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// maxMCPServers bounds one file's servers: a larger file is malformed.
const maxMCPServers = 100

// ParseMCP parses an mcp.json or .mcp.json in Claude Code's format:
//
//	{"mcpServers": {"<name>": {"command": "...", "args": [...], "env": {...}}
//	                        | {"type": "http" | "sse", "url": "...", "headers": {...}}}}
//
// path names the file in errors (with the line); source is MCPSource*. Unknown keys and duplicates are errors.
func ParseMCP(path string, data []byte, source string) ([]MCPServer, error) {
	p := newParser(path, data)
	var out []MCPServer
	err := p.Object("the file", func(key string, off int64) error {
		if key != "mcpServers" {
			return p.Errorf(off, "unknown key %q (want mcpServers)", key)
		}
		return p.Object(`"mcpServers"`, func(name string, off int64) error {
			if len(out) >= maxMCPServers {
				return p.Errorf(off, "more than %d servers", maxMCPServers)
			}
			srv, err := p.mcpServer(name, off)
			if err != nil {
				return err
			}
			srv.Source, srv.File = source, path
			out = append(out, srv)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if err := p.End(); err != nil {
		return nil, err
	}
	return out, nil
}

func (p *parser) mcpServer(name string, off int64) (MCPServer, error) {
	what := fmt.Sprintf("server %q", name)
	srv := MCPServer{Name: name, Line: p.Line(off)}
	if err := checkMCPName(name); err != nil {
		return srv, p.Errorf(off, "%s: %v", what, err)
	}
	err := p.Object(what, func(key string, off int64) error {
		var err error
		switch key {
		case "type":
			srv.Type, off, err = p.String(what + ".type")
			if err == nil && srv.Type != MCPStdio && srv.Type != MCPHTTP && srv.Type != MCPSSE {
				return p.Errorf(off, "%s: type %q (want stdio, http or sse)", what, srv.Type)
			}
		case "command":
			srv.Command, _, err = p.String(what + ".command")
		case "url":
			srv.URL, _, err = p.String(what + ".url")
		case "args":
			srv.Args, err = p.strList(what + ".args")
		case "env":
			srv.Env, err = p.strMap(what + ".env")
		case "headers":
			srv.Headers, err = p.strMap(what + ".headers")
		default:
			return p.Errorf(off, "%s: unknown key %q (want type, command, args, env, url or headers)", what, key)
		}
		return err
	})
	if err != nil {
		return srv, err
	}
	if err := srv.check(); err != nil {
		return srv, p.Errorf(off, "%s: %v", what, err)
	}
	return srv, nil
}

// check completes and checks a definition: a stdio server has a command and no URL, an HTTP or SSE server an
// http(s) URL and no command.
func (s *MCPServer) check() error {
	if s.Type == "" {
		s.Type = MCPStdio
		if s.URL != "" && s.Command == "" {
			s.Type = MCPHTTP
		}
	}
	switch s.Type {
	case MCPStdio:
		if strings.TrimSpace(s.Command) == "" {
			return fmt.Errorf("a stdio server needs a command")
		}
		// No exec can carry a NUL: refused here, before a consent is asked, not as a failed start.
		if strings.ContainsRune(s.Command, 0) {
			return fmt.Errorf("the command holds a NUL character")
		}
		if slices.ContainsFunc(s.Args, func(a string) bool { return strings.ContainsRune(a, 0) }) {
			return fmt.Errorf("the args hold a NUL character")
		}
		if s.URL != "" || len(s.Headers) > 0 {
			return fmt.Errorf("a stdio server takes no url or headers")
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("env: %q is not a variable name", k)
			}
			if strings.ContainsRune(s.Env[k], 0) {
				return fmt.Errorf("env: the value of %q holds a NUL character", k)
			}
		}
	case MCPHTTP, MCPSSE:
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return fmt.Errorf("an %s server takes no command, args or env", s.Type)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q is not an http or https address", s.URL)
		}
		// A header no request can carry is refused here (before a consent is asked), not as a transport's error.
		for _, k := range s.HeaderNames() {
			if !httpguts.ValidHeaderFieldName(k) {
				return fmt.Errorf("header %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", k)
			}
			if !httpguts.ValidHeaderFieldValue(s.Headers[k]) {
				return fmt.Errorf("header %q: its value holds a line break or another control character", k)
			}
		}
	default:
		return fmt.Errorf("type %q (want stdio, http or sse)", s.Type)
	}
	return nil
}

// checkMCPName refuses names that could not be told apart in a question or a rule: empty, too long, or with
// characters outside letters, digits, '_', '-' and '.'.
func checkMCPName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("the name must be 1 to 64 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("the name may hold only letters, digits, '_', '-' and '.'")
		}
	}
	return nil
}

// MCPServerOf checks an editor's server (from session/new or load) as a file's would be.
func MCPServerOf(s MCPServer) (MCPServer, error) {
	s.Source, s.File = MCPSourceEditor, "the editor"
	if err := checkMCPName(s.Name); err != nil {
		return s, fmt.Errorf("the editor's MCP server %q: %w", s.Name, err)
	}
	if err := s.check(); err != nil {
		return s, fmt.Errorf("the editor's MCP server %q: %w", s.Name, err)
	}
	return s, nil
}

// strList reads a list of strings.
func (p *parser) strList(what string) ([]string, error) {
	tok, err := p.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		off := p.Offset()
		if err := p.SkipRest(tok); err != nil {
			return nil, err
		}
		return nil, p.Errorf(off, "%s: want a list of strings, got %s", what, strictjson.Describe(tok))
	}
	out := []string{}
	for p.More() {
		tok, err := p.Token()
		if err != nil {
			return nil, err
		}
		v, ok := tok.(string)
		if !ok {
			return nil, p.Errorf(p.Offset(), "%s: want a list of strings, got %s in it", what, strictjson.Describe(tok))
		}
		out = append(out, v)
	}
	_, err = p.Token()
	return out, err
}

// strMap reads an object of strings.
func (p *parser) strMap(what string) (map[string]string, error) {
	out := map[string]string{}
	err := p.Object(what, func(key string, off int64) error {
		v, _, err := p.String(what + "." + key)
		out[key] = v
		return err
	})
	return out, err
}
