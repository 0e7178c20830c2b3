package brokerconn

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// mcpTools is what the runner knows of the session's MCP tools: the broker's list, by model name.
type mcpTools struct {
	mu      sync.Mutex
	started bool
	gen     uint64
	byName  map[string]*execv1.McpTool
	specs   []model.ToolSpec
	prompts []*execv1.CommandInfo
	pending []string // notices of a refresh inside Specs, shown with the next RefreshMCP
	// listed is when the broker's list was last taken; ran says that a tool call ran since. A step's several Specs
	// calls (the system prompt's, the request's) share one list, taken again once a tool ran (it may have changed
	// the server's tools) or when it is older than maxListAge.
	listed time.Time
	ran    bool
}

// maxListAge is how long a list of MCP tools is reused when no tool call ran since it was taken.
const maxListAge = time.Second

// MCPServers are the names of the servers whose tools or prompts the last refresh listed.
func (r *Runner) MCPServers() []string {
	r.mcp.mu.Lock()
	defer r.mcp.mu.Unlock()
	var out []string
	add := func(n string) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, t := range r.mcp.byName {
		add(t.GetServer())
	}
	for _, p := range r.mcp.prompts {
		srv, _, _ := strings.Cut(p.GetName(), ":")
		add(srv)
	}
	return out
}

// MCPPrompts are the servers' prompts for the / menu, as of the last refresh.
func (r *Runner) MCPPrompts() []*execv1.CommandInfo {
	r.mcp.mu.Lock()
	defer r.mcp.mu.Unlock()
	return append([]*execv1.CommandInfo(nil), r.mcp.prompts...)
}

// refreshWait bounds how long a refresh inside Specs waits for the broker.
const refreshWait = 2 * time.Second

// RefreshMCP takes the session's MCP tools after mcp_start, from its result (listed) or, when it has none, from the
// broker, and returns the broker's notices: servers that failed or restarted, tools left out. Later Specs calls
// refresh the list themselves, so that a server's tools/list_changed reaches the model from its next step.
func (r *Runner) RefreshMCP(ctx context.Context, listed *execv1.McpToolsResponse) []string {
	r.mcp.mu.Lock()
	r.mcp.started = true
	pending := r.mcp.pending
	r.mcp.pending = nil
	r.mcp.mu.Unlock()
	if listed != nil {
		return append(pending, r.take(listed)...)
	}
	return append(pending, r.refresh(ctx)...)
}

func (r *Runner) refresh(ctx context.Context) []string {
	res, err := r.Client.McpTools(ctx, &execv1.McpToolsRequest{SessionId: r.SessionID})
	if err != nil {
		return []string{fmt.Sprintf("the MCP tools could not be listed: %v", Words(err))}
	}
	return r.take(res)
}

// take makes the broker's list the model's MCP tools, and returns its notices.
func (r *Runner) take(res *execv1.McpToolsResponse) []string {
	r.mcp.mu.Lock()
	defer r.mcp.mu.Unlock()
	r.mcp.listed, r.mcp.ran = time.Now(), false
	r.mcp.prompts = res.GetPrompts()
	if res.GetGeneration() == r.mcp.gen && r.mcp.byName != nil {
		return res.GetNotices()
	}
	r.mcp.gen = res.GetGeneration()
	r.mcp.byName = map[string]*execv1.McpTool{}
	r.mcp.specs = nil
	for _, t := range res.GetTools() {
		// The broker checked the schema; a front end that cannot read it leaves the tool out rather than send it.
		if !json.Valid([]byte(t.GetInputSchemaJson())) {
			continue
		}
		r.mcp.byName[t.GetName()] = t
		r.mcp.specs = append(r.mcp.specs, model.ToolSpec{Name: t.GetName(), Description: t.GetDescription(),
			InputSchema: json.RawMessage(t.GetInputSchemaJson())})
	}
	return res.GetNotices()
}

// mcpSpecs are the MCP tools' specs, refreshed from the broker once MCP started.
func (r *Runner) mcpSpecs() []model.ToolSpec {
	r.mcp.mu.Lock()
	started, fresh := r.mcp.started, !r.mcp.ran && time.Since(r.mcp.listed) < maxListAge
	specs := append([]model.ToolSpec(nil), r.mcp.specs...)
	r.mcp.mu.Unlock()
	if !started {
		return nil
	}
	if fresh {
		return specs
	}
	ctx, cancel := context.WithTimeout(context.Background(), refreshWait)
	notices := r.refresh(ctx)
	cancel()
	r.mcp.mu.Lock()
	defer r.mcp.mu.Unlock()
	r.mcp.pending = append(r.mcp.pending, notices...)
	return append([]model.ToolSpec(nil), r.mcp.specs...)
}

// toolRan notes that a tool call ended: the next Specs lists the MCP tools again.
func (r *Runner) toolRan() {
	r.mcp.mu.Lock()
	r.mcp.ran = true
	r.mcp.mu.Unlock()
}

// mcpStart is the broker call of an MCP tool, or nil for a name that is not one.
func (r *Runner) mcpStart(callID, name string, input json.RawMessage) *execv1.Start {
	r.mcp.mu.Lock()
	t := r.mcp.byName[name]
	r.mcp.mu.Unlock()
	if t == nil {
		return nil
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return &execv1.Start{CallId: callID, Op: &execv1.Start_McpCall{McpCall: &execv1.McpCall{Server: t.GetServer(), Tool: t.GetTool(),
		ArgumentsJson: string(input)}}}
}
