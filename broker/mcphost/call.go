package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is what a tool call gave, as text for the model.
type Result struct {
	Text    string // the text content, then notes for what was left out (images, audio)
	IsError bool   // the tool reported an error
}

// ErrNotRunning is a call to a server that is not running (never started, denied, or stopped).
var ErrNotRunning = errors.New("the MCP server is not running")

// ErrNotOffered is a call to a tool the model is not offered: one the server does not list, or one left out of
// the list (an invalid input schema, past a limit), which is not called by its raw name either.
var ErrNotOffered = errors.New("it is not one of the tools offered to the model, so it cannot be called")

// Call calls a tool with arguments (a JSON object). Cancelling ctx cancels the request: the SDK sends the server
// notifications/cancelled and the call returns at once.
func (h *Host) Call(ctx context.Context, server, tool string, args json.RawMessage) (*Result, error) {
	srv, err := h.has(server, tool)
	if err != nil {
		return nil, err
	}
	var argv map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &argv); err != nil {
			return nil, fmt.Errorf("the arguments are not a JSON object: %w", err)
		}
	}
	var res *mcp.CallToolResult
	err = h.request(ctx, srv, server, "the call", "", func(cctx context.Context) (err error) {
		res, err = srv.cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: argv})
		return err
	})
	if err != nil {
		return nil, err
	}
	return textOf(res), nil
}

// request sends one request to a server (a tool call, a prompt, a resource) with at most CallTimeout to answer: a
// request a server never answers would hold the turn for ever, and garuda run in CI until the job's own timeout.
// Cancelling ctx cancels it (the SDK sends notifications/cancelled); its failure is said in words, naming server
// (what names the request in the timeout's words; label, if any, heads any other failure).
func (h *Host) request(ctx context.Context, srv *server, server, what, label string, send func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	err := send(cctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case cctx.Err() != nil:
		return fmt.Errorf("MCP server %q did not answer %s within %s; it was cancelled", server, what, h.opts.CallTimeout)
	}
	h.mu.Lock()
	err = explain(err, srv)
	h.mu.Unlock()
	return fmt.Errorf("MCP server %q: %s%w", server, label, err)
}

// textOf is a result's content as text: text blocks and text resources as they are, structured content when there
// is no text, a note for each image, audio or binary resource (the model here reads no images).
func textOf(res *mcp.CallToolResult) *Result {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[an image (%s) was left out: images are not passed to the model]", c.MIMEType))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio (%s) was left out]", c.MIMEType))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.URI, c.Name))
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil && r.Text != "" {
				parts = append(parts, r.Text)
			} else if r != nil {
				parts = append(parts, fmt.Sprintf("[binary resource %s (%s) was left out]", r.URI, r.MIMEType))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return &Result{Text: strings.Join(parts, "\n"), IsError: res.IsError}
}
