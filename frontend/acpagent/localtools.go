package acpagent

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/tools"
	"github.com/garuda-dev/garuda/frontend/visible"
)

// sessionTools are a session's tools: the broker's, through the runner, and the local ones of the tool table (the
// plan, subagents), which act on nothing the broker guards themselves (a subagent's calls go to the broker).
type sessionTools struct {
	s      *acpSession
	runner *brokerconn.Runner
}

var _ agent.Tools = (*sessionTools)(nil)

func (t *sessionTools) Specs() []model.ToolSpec   { return t.runner.Specs() }
func (t *sessionTools) ReadOnly(name string) bool { return t.runner.ReadOnly(name) }

func (t *sessionTools) Run(ctx context.Context, call agent.ToolCall, progress func(string)) agent.ToolResult {
	switch call.Name {
	case tools.Todo:
		progress("") // running, for the instant it takes
		return t.s.todo(call)
	case tools.Subagent:
		return t.s.subagent(ctx, call, progress)
	}
	return t.runner.Run(ctx, call, progress)
}

// Bounds of the plan: against a model that sends a list no editor can show (10,000 entries, a novel per entry).
const (
	maxPlanEntries = 100
	maxPlanContent = visible.MaxTitle // runes of one entry, shown as one line; longer is cut
)

var (
	planStatus = map[string]acp.PlanEntryStatus{"pending": acp.PlanEntryStatusPending,
		"in_progress": acp.PlanEntryStatusInProgress, "completed": acp.PlanEntryStatusCompleted}
	planPriority = map[string]acp.PlanEntryPriority{"": acp.PlanEntryPriorityMedium, "high": acp.PlanEntryPriorityHigh,
		"medium": acp.PlanEntryPriorityMedium, "low": acp.PlanEntryPriorityLow}
)

// todo sends the model's plan to the editor as one plan update (the whole list, as ACP says; it is recorded in the
// session file like every update, so a loaded session shows it) and tells the model what the plan now is.
func (s *acpSession) todo(call agent.ToolCall) agent.ToolResult {
	fail := func(msg string) agent.ToolResult {
		return agent.ToolResult{CallID: call.ID, Status: agent.StatusFailed, Content: msg}
	}
	v, err := tools.Decode(call.Name, call.Input)
	if err != nil {
		return fail(err.Error())
	}
	in := v.(*tools.TodoInput)
	if len(in.Todos) > maxPlanEntries {
		return fail(fmt.Sprintf("The plan was not changed: it has %d entries, at most %d are allowed. Keep the plan to "+
			"the steps of this task.", len(in.Todos), maxPlanEntries))
	}
	entries := make([]acp.PlanEntry, 0, len(in.Todos))
	var notes []string
	counts := map[acp.PlanEntryStatus]int{}
	var current []string
	for i, e := range in.Todos {
		st, ok := planStatus[e.Status]
		if !ok {
			return fail(fmt.Sprintf("The plan was not changed: entry %d has status %q; use pending, in_progress or completed.",
				i+1, e.Status))
		}
		pr, ok := planPriority[e.Priority]
		if !ok {
			return fail(fmt.Sprintf("The plan was not changed: entry %d has priority %q; use high, medium or low.", i+1, e.Priority))
		}
		content := strings.TrimSpace(e.Content)
		if content == "" {
			return fail(fmt.Sprintf("The plan was not changed: entry %d has no content.", i+1))
		}
		if utf8.RuneCountInString(content) > maxPlanContent {
			notes = append(notes, fmt.Sprintf("entry %d was cut to %d characters", i+1, maxPlanContent))
		}
		if visible.HasHidden(content) {
			notes = append(notes, fmt.Sprintf("entry %d has hidden characters, shown escaped", i+1))
		}
		// Defends against an entry that shows as other text: hidden characters become visible, on one line, cut.
		shown := visible.OneLine(content)
		entries = append(entries, acp.PlanEntry{Content: shown, Status: st, Priority: pr})
		counts[st]++
		if st == acp.PlanEntryStatusInProgress {
			current = append(current, shown)
		}
	}
	s.update(s.srv.base, acp.UpdatePlan(entries...))
	var b strings.Builder
	fmt.Fprintf(&b, "The plan has %d entries: %d completed, %d in progress, %d pending.", len(entries),
		counts[acp.PlanEntryStatusCompleted], counts[acp.PlanEntryStatusInProgress], counts[acp.PlanEntryStatusPending])
	if len(current) > 0 {
		fmt.Fprintf(&b, " In progress: %s.", strings.Join(current, "; "))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " Note: %s.", strings.Join(notes, "; "))
	}
	return agent.ToolResult{CallID: call.ID, Status: agent.StatusCompleted, Content: b.String()}
}
