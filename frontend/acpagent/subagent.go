package acpagent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/tools"
	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Limits of one subagent run: against a subagent that loops, each run is bounded on its own, within its parent's
// turn (whose cancel stops it).
const (
	subagentMaxSteps  = 25
	subagentMaxTokens = 500_000
	// subagentLogLines bounds the lines of the subagent's entry that show its calls.
	subagentLogLines = 40
	// maxSubagentDepth bounds how deep subagents nest: a subagent starts subagents only when its definition lists
	// the tool (Garuda's `subagent` or Claude Code's `Task`), and never below this depth (against a recursion that
	// multiplies its limits).
	maxSubagentDepth = 3
)

// agentDef is an agent a subagent call may name.
type agentDef struct {
	name, description string
	tools             []string // the tools it is offered, of the parent's
	plan              bool     // its calls are decided and run in plan mode, by the broker (Start.mode)
	prompt            string   // its own instructions, after Garuda's system prompt
	model             string   // the model its frontmatter names; "" or "inherit": its parent's
	subagents         bool     // it may start subagents of its own (its tools list subagent or Task)
}

// explore is the built-in read-only agent.
var explore = agentDef{
	name:        "explore",
	description: "investigates the project read-only and reports what it found",
	tools:       []string{tools.ReadFile, tools.Glob, tools.Grep, tools.Bash},
	plan:        true,
	prompt: "You explore the project to answer the task: search broadly, read what matters, and run read-only " +
		"commands where they help. You cannot change anything. End with a concise report of what you found, " +
		"with path:line references, so that the agent that asked can act on it without reading it all again.",
}

// notForSubagents are never offered to a subagent: a subagent keeps no plan of its parent's and starts no
// background process that would outlive it. It starts subagents only as maxSubagentDepth says.
var notForSubagents = []string{tools.Todo, tools.Process}

// claudeTools maps Claude Code's tool names, as agents' frontmatter lists them, to Garuda's.
var claudeTools = map[string]string{"Read": tools.ReadFile, "Write": tools.WriteFile, "Edit": tools.EditFile,
	"MultiEdit": tools.EditFile, "Glob": tools.Glob, "Grep": tools.Grep, "Bash": tools.Bash, "LS": tools.Glob,
	"Task": tools.Subagent}

// customAgent is the definition of a custom agent: its tools (Claude Code's names or Garuda's; none listed: every
// tool a subagent may have but subagent), its model and its instructions. Its calls are decided in the session's
// mode.
func customAgent(a *execv1.AgentDefinition) *agentDef {
	d := &agentDef{name: a.GetName(), description: a.GetDescription(), prompt: a.GetInstructions(), model: a.GetModel()}
	for _, t := range a.GetTools() {
		if g, ok := claudeTools[t]; ok {
			t = g
		}
		if !slices.Contains(d.tools, t) {
			d.tools = append(d.tools, t)
		}
	}
	d.subagents = slices.Contains(d.tools, tools.Subagent)
	if len(d.tools) == 0 {
		d.tools = []string{tools.ReadFile, tools.WriteFile, tools.EditFile, tools.Glob, tools.Grep, tools.Bash, tools.Skill}
	}
	return d
}

// subagent runs a task in a fresh loop with its own context, a narrowed tool set and its own limits, through the
// same broker session (so the same policy; for explore, in plan mode, which the broker enforces), and returns its
// final answer. Its calls are shown as the content of its entry; a question of one of its calls gets its own
// entry (the broker names a call the editor does not know).
func (s *acpSession) subagent(ctx context.Context, call agent.ToolCall, progress func(string)) agent.ToolResult {
	return s.runSubagent(ctx, call, progress, subagentParent{depth: 0, tools: s.runner.Specs(), mode: s.currentTurnMode()})
}

// subagentParent is what a subagent inherits from whoever called it: it never gets more tools, nor a looser mode.
type subagentParent struct {
	depth int               // 0: the session's own loop
	tools []model.ToolSpec  // the caller's tools
	mode  string            // the caller's mode (agent.ModePlan for explore and everything it starts)
	plan  bool              // the caller's calls go to the broker in plan mode (Start.mode)
	model *subagentModelSet // the caller's model
}

// subagentModelSet is the model a loop talks to.
type subagentModelSet struct {
	client                       model.Client
	contextWindow, maxOutputToks int
}

func (s *acpSession) runSubagent(ctx context.Context, call agent.ToolCall, progress func(string), parent subagentParent) agent.ToolResult {
	fail := func(msg string) agent.ToolResult {
		return agent.ToolResult{CallID: call.ID, Status: agent.StatusFailed, Content: msg}
	}
	v, err := tools.Decode(call.Name, call.Input)
	if err != nil {
		return fail(err.Error())
	}
	in := v.(*tools.SubagentInput)
	def := &explore
	if in.Agent != explore.name {
		// A custom agent: the broker reads it (the front end reads no file) and asks consent for a project's own.
		load := &execv1.Start{CallId: call.ID, Op: &execv1.Start_LoadAgent{LoadAgent: &execv1.LoadAgent{Name: in.Agent}}}
		res, err := s.runner.Call(ctx, load, nil)
		switch {
		case err != nil && ctx.Err() != nil:
			return agent.ToolResult{CallID: call.ID, Status: agent.StatusCancelled, Content: "Cancelled."}
		case err != nil:
			return fail(err.Error())
		case res.GetStatus() != execv1.Status_STATUS_COMPLETED || res.GetAgent() == nil:
			r := brokerconn.Result(call.ID, res)
			r.Content = "The agent could not be used: " + r.Content
			return r
		}
		def = customAgent(res.GetAgent())
	}
	depth := parent.depth + 1
	var specs []model.ToolSpec
	for _, sp := range parent.tools {
		switch {
		case !slices.Contains(def.tools, sp.Name), slices.Contains(notForSubagents, sp.Name):
		case sp.Name == tools.Subagent && (!def.subagents || depth >= maxSubagentDepth):
		default:
			specs = append(specs, sp)
		}
	}
	runner := &brokerconn.Runner{Client: s.srv.opts.Broker, SessionID: s.id, Approver: &approver{sess: s}, Tools: specs,
		Notice: s.resultNotice}
	mode := parent.mode
	if def.plan || parent.plan {
		runner.Mode, mode = execv1.Mode_MODE_PLAN, agent.ModePlan
	}
	log := &subagentLog{}
	m := parent.model
	if m == nil {
		m = &subagentModelSet{client: s.conv.Model, contextWindow: s.conv.ContextWindow, maxOutputToks: s.conv.MaxOutputTokens}
	}
	if def.model != "" && def.model != "inherit" {
		own, note := s.subagentModel(ctx, def.model)
		if own != nil {
			m = own
		}
		if note != "" {
			log.lines = append(log.lines, note)
		}
	}
	me := subagentParent{depth: depth, tools: specs, mode: mode, plan: runner.Mode == execv1.Mode_MODE_PLAN, model: m}
	sub := &agent.Conversation{
		Model:           m.client,
		Tools:           &subagentTools{sess: s, runner: runner, prefix: call.ID + "/", self: me},
		MaxOutputTokens: m.maxOutputToks,
		ContextWindow:   m.contextWindow,
		Limits:          agent.Limits{MaxSteps: subagentMaxSteps, MaxTokens: subagentMaxTokens},
		Settle:          turnSettle,
		System: func() string {
			info := agent.PromptInfo{Root: s.root, Mode: mode, Date: time.Now().Format("2006-01-02"),
				Tools: specs, ToolRules: tools.Rules(specs), Instructions: s.instructions, InstructionsFile: s.instructionsFile}
			if slices.ContainsFunc(specs, func(sp model.ToolSpec) bool { return sp.Name == tools.Subagent }) {
				info.Agents = append([]agent.SkillInfo{{Name: explore.name, Description: explore.description}}, s.customAgents...)
			}
			return agent.SystemPrompt(info) +
				"\n\n# You are a subagent\nYou are the " + def.name + " agent, called by another agent with one task. " +
				"Your final answer is returned to it as the result (the user sees it there); nothing else of your " +
				"work reaches it. Answer the task fully in that one final message.\n\n" + def.prompt
		},
	}
	progress(log.String()) // running
	onEvent := func(e agent.Event) {
		if log.add(e) {
			progress(log.String())
		}
	}
	stop, err := sub.RunTurn(ctx, in.Task, onEvent)
	// SubagentStop hooks may keep the subagent going (a block: its reason is the subagent's next prompt), as Stop
	// hooks do a turn, a few times at most.
	for i := 0; err == nil && stop == agent.StopDone && ctx.Err() == nil && i <= maxStopContinuations; i++ {
		o := s.hook(ctx, ctx, &execv1.HookEvent{Event: hookSubagentStop, StopHookActive: i > 0})
		if !o.GetBlocked() || i == maxStopContinuations || o.GetStop() {
			break
		}
		stop, err = sub.RunTurn(ctx, "A SubagentStop hook did not let the subagent end: "+o.GetReason(), onEvent)
	}
	answer := lastText(sub.History)
	switch {
	case ctx.Err() != nil || stop == agent.StopCancelled:
		return agent.ToolResult{CallID: call.ID, Status: agent.StatusCancelled, Content: "Cancelled: the subagent was stopped."}
	case err != nil:
		return fail(fmt.Sprintf("The subagent %s failed: %v", def.name, err))
	}
	if stop != agent.StopDone {
		answer = fmt.Sprintf("[the subagent stopped before it finished (%s): at most %d model steps and %d tokens]\n%s",
			stop, subagentMaxSteps, subagentMaxTokens, answer)
	}
	if strings.TrimSpace(answer) == "" {
		answer = "(the subagent gave no answer)"
	}
	return agent.ToolResult{CallID: call.ID, Status: agent.StatusCompleted, Content: answer}
}

// claudeModelAliases are the model names of Claude Code's agent files that name a family, not a model.
var claudeModelAliases = []string{"sonnet", "opus", "haiku"}

// subagentModel is the model a custom agent's frontmatter names: a model of models.json or provider/model-id, as
// the model picker takes them, or one of Claude Code's aliases (sonnet, opus, haiku), which is the newest offered
// model of the session's provider whose name holds it. A model that cannot be used leaves the parent's, with a note
// for the subagent's entry.
func (s *acpSession) subagentModel(ctx context.Context, name string) (*subagentModelSet, string) {
	s.mu.Lock()
	c := s.cfg
	s.mu.Unlock()
	want := name
	if slices.Contains(claudeModelAliases, strings.ToLower(name)) {
		want = ""
		for _, ch := range c.choices {
			if ch.GetProvider() == c.settings.GetProvider() && strings.Contains(strings.ToLower(ch.GetName()), strings.ToLower(name)) &&
				ch.GetName() > want {
				want = ch.GetName()
			}
		}
	}
	keep := fmt.Sprintf("(model %q is not available here: the subagent uses %s)", visible.OneLine(name), visible.OneLine(c.settings.GetName()))
	if want == "" {
		return nil, keep
	}
	if want == c.settings.GetName() {
		return nil, ""
	}
	srv := s.srv
	prep, err := srv.opts.Broker.Prepare(ctx, &execv1.PrepareRequest{Model: want, EnvKeys: EnvKeys(srv.opts.Getenv)})
	if err != nil || prep.GetReady() == nil {
		return nil, keep
	}
	ms := prep.GetReady()
	client, err := srv.opts.NewModel(ms, srv.apiKey(ms))
	if err != nil {
		return nil, keep
	}
	return &subagentModelSet{client: client, contextWindow: int(ms.GetContextWindow()), maxOutputToks: int(ms.GetMaxOutputTokens())},
		"(model " + visible.OneLine(ms.GetName()) + ")"
}

// loadAgents reads the custom agents' names and descriptions through the broker, once a session, at its first
// prompt (not at session/new, which stays as fast as it was), for the system prompt.
func (s *acpSession) loadAgents(ctx context.Context) {
	s.agentsOnce.Do(func() {
		res, err := s.runner.Call(ctx, &execv1.Start{Op: &execv1.Start_LoadAgent{LoadAgent: &execv1.LoadAgent{}}}, nil)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			s.srv.opts.Log.Debug("list the custom agents", "session", s.id, "err", err)
			return
		}
		for _, line := range strings.Split(res.GetContent(), "\n") {
			if name, desc, ok := strings.Cut(line, ": "); ok && name != "" {
				s.customAgents = append(s.customAgents, agent.SkillInfo{Name: name, Description: desc})
			}
		}
	})
}

// currentTurnMode is the mode of the running turn.
func (s *acpSession) currentTurnMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turnMode == "" {
		return agent.ModeBuild
	}
	return s.turnMode
}

// lastText is the text of the last assistant message.
func lastText(h []model.Message) string {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role != model.RoleAssistant {
			continue
		}
		var b strings.Builder
		for _, bl := range h[i].Content {
			if bl.Type == model.BlockText {
				b.WriteString(bl.Text)
			}
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	return ""
}

// subagentTools are a subagent's tools: its runner, with its calls' ids prefixed by its own call's. Defends against
// a subagent's call id that equals one of the parent's: a question about it would be shown on the parent's entry.
type subagentTools struct {
	sess   *acpSession
	runner *brokerconn.Runner
	prefix string
	self   subagentParent // what a subagent this one starts inherits
}

func (t *subagentTools) Specs() []model.ToolSpec   { return t.runner.Specs() }
func (t *subagentTools) ReadOnly(name string) bool { return t.runner.ReadOnly(name) }

func (t *subagentTools) Run(ctx context.Context, call agent.ToolCall, progress func(string)) agent.ToolResult {
	if !slices.ContainsFunc(t.runner.Tools, func(sp model.ToolSpec) bool { return sp.Name == call.Name }) {
		// Against a subagent calling a tool it was not offered (subagent, todo, write_file for explore).
		return agent.ToolResult{CallID: call.ID, Status: agent.StatusFailed,
			Content: fmt.Sprintf("%s is not one of this agent's tools.", call.Name)}
	}
	call.ID = t.prefix + call.ID
	if call.Name == tools.Subagent {
		// Offered only where the definition lists it and the depth allows: a subagent of its own, narrowed again.
		return t.sess.runSubagent(ctx, call, func(string) {}, t.self)
	}
	return t.runner.Run(ctx, call, nil)
}

// subagentLog is what a subagent's entry shows: one line per call of the subagent, marked when it ends.
type subagentLog struct {
	lines []string
	index map[string]int
}

// add notes an event; it reports whether the shown log changed.
func (l *subagentLog) add(e agent.Event) bool {
	if l.index == nil {
		l.index = map[string]int{}
	}
	switch e.Type {
	case agent.EventToolCall:
		title, _ := tools.Describe(e.Call.Name, e.Call.Input)
		l.index[e.Call.ID] = len(l.lines)
		l.lines = append(l.lines, "… "+title)
	case agent.EventToolResult:
		i, ok := l.index[e.Call.ID]
		if !ok {
			return false
		}
		mark := "✓ "
		switch e.Result.Status {
		case agent.StatusDenied:
			mark = "✗ denied: "
		case agent.StatusFailed:
			mark = "✗ "
		case agent.StatusCancelled:
			mark = "✗ cancelled: "
		}
		l.lines[i] = mark + strings.TrimPrefix(l.lines[i], "… ")
	case agent.EventNotice:
		l.lines = append(l.lines, e.Text)
	default:
		return false
	}
	return true
}

func (l *subagentLog) String() string {
	lines := l.lines
	if len(lines) > subagentLogLines {
		lines = append([]string{fmt.Sprintf("(%d earlier calls)", len(lines)-subagentLogLines)}, lines[len(lines)-subagentLogLines:]...)
	}
	return strings.Join(lines, "\n")
}
