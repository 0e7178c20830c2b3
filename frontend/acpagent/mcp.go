package acpagent

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// mcpServers turns the editor's mcpServers into the broker's: the broker starts each after its consent. An ACP
// server (the unstable "acp" transport) is not one Garuda can start: it is named in a notice.
func mcpServers(in []acp.McpServer) ([]*execv1.McpServer, []string) {
	var out []*execv1.McpServer
	var notices []string
	headers := func(hs []acp.HttpHeader) map[string]string {
		m := map[string]string{}
		for _, h := range hs {
			m[h.Name] = h.Value
		}
		return m
	}
	for _, m := range in {
		switch {
		case m.Stdio != nil:
			env := map[string]string{}
			for _, e := range m.Stdio.Env {
				env[e.Name] = e.Value
			}
			out = append(out, &execv1.McpServer{Name: m.Stdio.Name, Type: "stdio", Command: m.Stdio.Command, Args: m.Stdio.Args, Env: env})
		case m.Http != nil && m.Http.Type == "":
			// The SDK decodes an entry that is no server of the schema (a stdio server without args or env) as
			// an HTTP server with no type; the broker would then complain about an empty URL.
			notices = append(notices, "the editor's MCP server "+strconv.Quote(visible.OneLine(m.Http.Name))+
				" is not started: it is neither a stdio server (command, args and env, each given, args and env may "+
				"be empty lists) nor an http or sse one (type and url); fix it in the editor's settings.")
		case m.Http != nil:
			out = append(out, &execv1.McpServer{Name: m.Http.Name, Type: "http", Url: m.Http.Url, Headers: headers(m.Http.Headers)})
		case m.Sse != nil:
			out = append(out, &execv1.McpServer{Name: m.Sse.Name, Type: "sse", Url: m.Sse.Url, Headers: headers(m.Sse.Headers)})
		case m.Acp != nil:
			notices = append(notices,
				"the editor's MCP server "+visible.OneLine(m.Acp.Name)+" uses the ACP transport, which Garuda does not speak; it is not started.")
		}
	}
	return out, notices
}

// startMCP starts the session's MCP servers (the broker asks each consent it needs, once) and takes their tools
// into the model's list, before the turn's first model request; their notices are shown.
func (s *acpSession) startMCP(ctx, uctx context.Context) {
	res, err := s.runner.Call(ctx, &execv1.Start{Op: &execv1.Start_McpStart{McpStart: &execv1.McpStart{}}}, nil)
	if err != nil {
		if ctx.Err() == nil {
			s.notice(uctx, "MCP servers were not started: "+err.Error())
		}
		return
	}
	for _, n := range res.GetNotices() {
		s.notice(uctx, n)
	}
	for _, n := range s.runner.RefreshMCP(ctx, res.GetMcpTools()) {
		s.notice(uctx, n)
	}
	// The servers' prompts join the / menu (as /server:prompt) when they change.
	prompts := s.runner.MCPPrompts()
	s.mu.Lock()
	changed := !slices.EqualFunc(prompts, s.mcpPrompts, func(a, b *execv1.CommandInfo) bool { return proto.Equal(a, b) })
	s.mcpPrompts = prompts
	menu := append(append([]*execv1.CommandInfo(nil), s.commands...), prompts...)
	s.mu.Unlock()
	if changed {
		s.update(uctx,
			acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: availableCommands(menu)}})
	}
}

// atResource finds "@server:uri" typed in the prompt (a server's name, a colon, the resource's URI).
var atResource = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[\s(\[])@([A-Za-z0-9_.-]+):(\S+)`) })

// resourceMention is a resource the user named: @server:uri.
type resourceMention struct{ server, uri string }

// resourceMentions returns the @server:uri mentions of the text, once each.
func resourceMentions(text string) []resourceMention {
	if !strings.Contains(text, "@") {
		return nil // no mention: the regexp is not compiled (at the first prompt) or run
	}
	var out []resourceMention
	for _, m := range atResource().FindAllStringSubmatch(text, -1) {
		r := resourceMention{server: m[1], uri: strings.TrimRight(m[2], ".,;!?)")}
		if r.uri != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// attachResources reads the mentioned resources of running servers (others are not mentions: "@main.go:12" names
// a line) and returns what to add to the prompt.
func (s *acpSession) attachResources(ctx, uctx context.Context, rs []resourceMention) string {
	var b strings.Builder
	servers := s.runner.MCPServers()
	for _, r := range rs {
		if !slices.Contains(servers, r.server) {
			continue
		}
		res, err := s.runner.Call(ctx, &execv1.Start{Op: &execv1.Start_McpResource{McpResource: &execv1.McpResource{Server: r.server,
			Uri: r.uri}}}, nil)
		switch {
		case ctx.Err() != nil:
			return b.String()
		case err != nil:
			s.notice(uctx, fmt.Sprintf("@%s:%s was not attached: %v", r.server, r.uri, err))
		case res.GetStatus() != execv1.Status_STATUS_COMPLETED:
			s.notice(uctx, fmt.Sprintf("@%s:%s was not attached: %s", r.server, r.uri, res.GetContent()))
		default:
			fmt.Fprintf(&b, "\n\nContents of @%s:%s:\n%s", r.server, r.uri, res.GetContent())
		}
	}
	return b.String()
}
