package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/commands"
	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// commandSet loads the session's custom commands and skills afresh: the project's from the folder the session holds
// open and the user's from $GARUDA_HOME, each listed through os.Root and read through conffile (no link followed).
func (s *Service) commandSet(sess *session) (*commands.Set, error) {
	proj, err := conffile.OpenDir(sess.fs.FDPath())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sess.root, err)
	}
	defer proj.Close()
	projFS, err := proj.FS()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sess.root, err)
	}
	userFS := emptyFS()
	if user, err := conffile.OpenDir(s.cfg.Home); err == nil {
		defer user.Close()
		if fsys, err := user.FS(); err == nil {
			userFS = fsys
		}
	}
	// The project's files are seen as the read policy lets the model see them.
	project := policyFS{fsys: projFS, root: sess.root, allow: s.allowRead(s.state(sess))}
	return commands.Load(project, userFS)
}

// commandList is the / menu of a session and the warnings about malformed command files.
func (s *Service) commandList(sess *session) ([]*execv1.CommandInfo, []string) {
	set, err := s.commandSet(sess)
	if err != nil {
		s.cfg.Log.Warn("commands not loaded", "err", err)
		if set == nil {
			return nil, nil
		}
	}
	var out []*execv1.CommandInfo
	for _, c := range set.List() {
		out = append(out, &execv1.CommandInfo{Name: c.Name, Description: c.Description, ArgumentHint: c.ArgumentHint,
			Source: c.Source, Skill: c.Skill})
	}
	return out, set.Warnings()
}

// ListCommands lists the session's custom commands and skills, with warnings for malformed ones.
func (s *Service) ListCommands(ctx context.Context, req *execv1.ListCommandsRequest) (*execv1.ListCommandsResponse, error) {
	sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	cmds, warnings := s.commandList(sess)
	return &execv1.ListCommandsResponse{Commands: cmds, Notices: warnings}, nil
}

func checkLoadAgent(s *Service, c *call) (*request, error) {
	name := c.start.GetLoadAgent().GetName()
	if name == "" {
		// The list, for the system prompt: names and descriptions only, as for skills (no consent before them).
		return &request{input: "(list)", run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			return s.listAgents(g)
		}}, nil
	}
	return &request{input: name, run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
		return s.loadAgent(g, name)
	}}, nil
}

// listAgents lists the custom agents, one "name: description" line each.
func (s *Service) listAgents(g *grant) (*execv1.Result, error) {
	set, err := s.commandSet(g.c.sess)
	if err != nil {
		return failed(err), nil
	}
	var b strings.Builder
	for _, a := range set.Agents() {
		fmt.Fprintf(&b, "%s: %s\n", a.Name, a.Description)
	}
	return &execv1.Result{Content: b.String()}, nil
}

// loadAgent gives the front end an agent's definition for a subagent, with the same consent as a skill: a
// project's own agent is instructions the repository brought.
func (s *Service) loadAgent(g *grant, name string) (*execv1.Result, error) {
	set, err := s.commandSet(g.c.sess)
	if err != nil {
		return failed(err), nil
	}
	a, ok := set.Agent(name)
	if !ok {
		names := []string{"explore"}
		for _, o := range set.Agents() {
			names = append(names, o.Name)
		}
		return failed(fmt.Errorf("there is no agent named %q; the agents are: %s", name, strings.Join(names, ", "))), nil
	}
	if res, err := s.consent(g, a); res != nil || err != nil {
		return res, err
	}
	var tools []string
	if a.Tools != "" {
		tools = strings.Split(a.Tools, ", ")
	}
	return &execv1.Result{Content: a.Body, Agent: &execv1.AgentDefinition{Name: a.Name, Description: a.Description,
		Tools: tools, Model: a.Model, Instructions: a.Body, Source: a.Source}}, nil
}

func checkResolveCommand(s *Service, c *call) (*request, error) {
	text := c.start.GetResolveCommand().GetText()
	return &request{input: text, run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
		if res, ok := s.mcpPrompt(ctx, c.sess, text); ok {
			return res, nil // an MCP server's prompt: its server's consent covers it
		}
		return s.resolveCommand(g, text)
	}}, nil
}

// resolveCommand resolves a prompt that starts with "/": a project's own command or skill needs a consent the
// first time, pinned by its content hash.
func (s *Service) resolveCommand(g *grant, text string) (*execv1.Result, error) {
	set, err := s.commandSet(g.c.sess)
	if err != nil {
		return failed(err), nil
	}
	r := set.Resolve(text)
	switch r.Kind {
	case commands.KindNotCommand:
		return &execv1.Result{Resolved: &execv1.Resolved{Kind: execv1.Resolved_KIND_NOT_COMMAND, Message: r.Message}}, nil
	case commands.KindMessage:
		return &execv1.Result{Content: r.Message, Resolved: &execv1.Resolved{Kind: execv1.Resolved_KIND_MESSAGE, Message: r.Message}}, nil
	}
	if res, err := s.consent(g, r.Command); res != nil || err != nil {
		return res, err
	}
	return &execv1.Result{Content: r.Prompt, Resolved: &execv1.Resolved{Kind: execv1.Resolved_KIND_PROMPT, Prompt: r.Prompt}}, nil
}

func checkLoadSkill(s *Service, c *call) (*request, error) {
	name := c.start.GetLoadSkill().GetName()
	if name == "" {
		return nil, fmt.Errorf("the skill's name is empty: %w", ErrBadRequest)
	}
	return &request{input: name, run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
		return s.loadSkill(g, name)
	}}, nil
}

// loadSkill gives the model a skill's body, with the same consent as /name.
func (s *Service) loadSkill(g *grant, name string) (*execv1.Result, error) {
	set, err := s.commandSet(g.c.sess)
	if err != nil {
		return failed(err), nil
	}
	sk, ok := set.Skill(name)
	if !ok {
		return failed(fmt.Errorf("no skill named %q", name)), nil
	}
	if res, err := s.consent(g, sk); res != nil || err != nil {
		return res, err
	}
	return &execv1.Result{Content: sk.Body}, nil
}

// consent asks, once per content hash, before a project's own command or skill is used: defends against a
// repository that plants instructions the user never chose to run.
func (s *Service) consent(g *grant, cmd *commands.Command) (*execv1.Result, error) {
	if cmd == nil || !commands.NeedsConsent(cmd) {
		return nil, nil
	}
	c := g.c
	kind := commands.ConsentKind(cmd)
	path := filepath.Join(s.cfg.Home, "consents.json")
	s.consentMu.Lock()
	defer s.consentMu.Unlock()
	cons, err := s.loadConsents(path)
	if err != nil {
		return nil, err
	}
	if cons.Granted(kind, cmd.Name, c.sess.root, cmd.Hash) {
		return nil, nil
	}
	req := policy.Request{Kind: policy.KindConsent, Tool: kind, ConsentKind: kind, ConsentName: cmd.Name}
	cg, res, err := s.decideAs(c, g.op, kind, req)
	if res != nil || err != nil {
		return res, err
	}
	q := &execv1.Question{
		Title:   consentTitle(kind, cmd.Name),
		Preview: fmt.Sprintf("%s (from %s) will be sent to the model as instructions:\n\n%s", cmd.Name, cmd.Path, cmd.Body),
		Consent: true,
	}
	if res, err := cg.confirm(q); res != nil || err != nil {
		return res, err
	}
	cons.Grant(kind, cmd.Name, c.sess.root, cmd.Hash)
	if err := s.record(audit.Record{Session: c.sess.id, Event: audit.EventConsent, Op: kind, Input: cmd.Name,
		Detail: map[string]string{"hash": cmd.Hash, "root": c.sess.root}}, true); err != nil {
		return nil, err
	}
	if err := homefile.WriteAtomic(path, cons.Marshal(), 0o600); err != nil {
		return nil, fmt.Errorf("save the consent: %w", err)
	}
	return nil, nil
}

// consentTitle is the question of a consent: "/name" for what the user calls by that name, the name of an agent.
func consentTitle(kind, name string) string {
	if kind == commands.ConsentAgent {
		return fmt.Sprintf("Use the project's agent %s?", name)
	}
	return fmt.Sprintf("Use the project's %s /%s?", kind, name)
}

func (s *Service) loadConsents(path string) (*commands.Consents, error) {
	data, err := readHomeFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if data == nil {
		return commands.ParseConsents(nil)
	}
	return commands.ParseConsents(data)
}
