package mcphost

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxPromptsPerServer bounds the prompts of a server offered in the / menu.
const MaxPromptsPerServer = 100

// Prompt is one prompt of a running server, for the / menu as /<server>:<name>.
type Prompt struct {
	Server, Name string
	Description  string
	Args         []string // its arguments' names, in order
}

// listPrompts lists a server's prompts, if it offers any (a server without the capability has none).
func listPrompts(ctx context.Context, cs *mcp.ClientSession) []*mcp.Prompt {
	if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Prompts == nil {
		return nil
	}
	var out []*mcp.Prompt
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil || len(out) >= MaxPromptsPerServer {
			break
		}
		out = append(out, p)
	}
	return out
}

// Prompts are the prompts of the running servers whose names fit a / command (letters, digits, '_', '-', '.').
func (h *Host) Prompts() []Prompt {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Prompt
	for name, srv := range h.servers {
		for _, p := range srv.prompts {
			if p == nil || !commandWord(p.Name) {
				continue
			}
			pr := Prompt{Server: name, Name: p.Name, Description: printable(p.Description, maxDescription)}
			for _, a := range p.Arguments {
				if a != nil {
					pr.Args = append(pr.Args, printable(a.Name, 64))
				}
			}
			out = append(out, pr)
		}
	}
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.Server+":"+a.Name, b.Server+":"+b.Name) })
	return out
}

func commandWord(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// GetPrompt gets a prompt's text with its arguments given in order (the last takes the rest of the line): the
// text of its messages, for the model, images left out with a note.
func (h *Host) GetPrompt(ctx context.Context, server, name, rest string) (string, bool, error) {
	h.mu.Lock()
	srv := h.servers[server]
	var prompt *mcp.Prompt
	if srv != nil {
		for _, p := range srv.prompts {
			if p != nil && p.Name == name {
				prompt = p
			}
		}
	}
	h.mu.Unlock()
	if prompt == nil {
		return "", false, nil
	}
	args := map[string]string{}
	words := strings.Fields(rest)
	for i, a := range prompt.Arguments {
		if a == nil || i >= len(words) {
			break
		}
		if i == len(prompt.Arguments)-1 {
			args[a.Name] = strings.Join(words[i:], " ")
		} else {
			args[a.Name] = words[i]
		}
	}
	var res *mcp.GetPromptResult
	err := h.request(ctx, srv, server, "the prompt "+name, "prompt "+name+": ", func(cctx context.Context) (err error) {
		res, err = srv.cs.GetPrompt(cctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	if err != nil {
		return "", true, err
	}
	var parts []string
	for _, m := range res.Messages {
		if m == nil {
			continue
		}
		parts = append(parts, textOf(&mcp.CallToolResult{Content: []mcp.Content{m.Content}}).Text)
	}
	return strings.Join(parts, "\n\n"), true, nil
}

// ReadResource reads a resource of a running server: its text contents, a note for each binary one.
func (h *Host) ReadResource(ctx context.Context, server, uri string) (string, error) {
	h.mu.Lock()
	srv := h.servers[server]
	h.mu.Unlock()
	if srv == nil {
		return "", fmt.Errorf("%s: %w", server, ErrNotRunning)
	}
	var res *mcp.ReadResourceResult
	err := h.request(ctx, srv, server, "the read of "+uri, "resource "+uri+": ", func(cctx context.Context) (err error) {
		res, err = srv.cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		parts = append(parts, textOf(&mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: c}}}).Text)
	}
	return strings.Join(parts, "\n"), nil
}
