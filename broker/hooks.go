package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/commands"
	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Where a hook comes from. Team hooks run first and always; the user's run as the user's own commands; the
// project's (.garuda/settings.json, .claude/settings.json) only once the user consented to exactly their definitions.
const (
	hookTeam    = "team"
	hookUser    = "user"
	hookProject = "project"
)

// hookConsentName is the name under which the consent to a project's hooks is kept (kind "hook", pinned to the hash
// of every hook definition of the project).
const hookConsentName = "project hooks"

// maxHookStdout bounds what is kept of a hook's standard output (its answer); the rest is read and dropped, so that
// a flood neither blocks the hook nor fills the broker's memory. Standard error is bounded by the sandbox.
const maxHookStdout = 64 << 10

// hookConsent is a session's state of the consent to its project's hooks.
type hookConsent struct {
	asked   bool // asked (or found) once this session: not asked again
	granted bool
}

// hookEvent is one point of a turn at which hooks run.
type hookEvent struct {
	name  string         // policy.Hook*
	names []string       // what matchers are matched against (a tool's names, a session start's source); nil: none
	input map[string]any // the event's own fields of the hook's input, beside the common ones
	// ask: the user is there to answer the consent question for the project's hooks. Events reported while the user
	// is not (SessionEnd at exit, a Notification, Stop, PreCompact) run the project's hooks only when consented.
	ask bool
}

// hookOutcome is what the hooks of one event said, together.
type hookOutcome struct {
	ran        int
	decision   string // "allow" (every hook that decided allowed), "ask", "deny" (also a block), or ""
	reason     string
	context    []string // for the model
	notices    []string // for the user, each starting with "Garuda:"
	stop       bool     // "continue": false
	stopReason string
}

func (o *hookOutcome) blocked() bool { return o.decision == "deny" }

// hooksFor lists the hooks of ev by source, team policy's first.
func hooksFor(files policyFiles, ev hookEvent) (team, user, project []policy.HookCommand) {
	if files.team != nil {
		team = files.team.Hooks.For(ev.name, ev.names)
	}
	if files.user != nil {
		user = files.user.Hooks.For(ev.name, ev.names)
	}
	project = projectHooks(files).For(ev.name, ev.names)
	return team, user, project
}

// projectHooks are every hook of the project: those of .garuda/settings.json, then of .claude/settings.json.
func projectHooks(files policyFiles) policy.Hooks {
	var h policy.Hooks
	if files.project != nil {
		h = files.project.Hooks
	}
	return h.Join(files.claudeHooks)
}

// hasHooks reports, without any I/O, whether any hook would run for ev in the session (consent aside).
func hasHooks(sess *session, ev hookEvent) bool {
	sess.mu.Lock()
	files := sess.files
	sess.mu.Unlock()
	t, u, p := hooksFor(files, ev)
	return len(t)+len(u)+len(p) > 0
}

// hookedEvents are the events the front end reports that do something in a session with these settings: those
// with a hook (any matcher, any source, consent aside), and UserPromptSubmit when team policy could not be read
// (blocked). The others are quiet (nothing runs, nothing is recorded), so the front end may leave them out.
func hookedEvents(files policyFiles) *execv1.HookedEvents {
	out := &execv1.HookedEvents{}
	project := projectHooks(files)
	for _, name := range frontEndEvents {
		n := len(project[name])
		if files.team != nil {
			n += len(files.team.Hooks[name])
		}
		if files.user != nil {
			n += len(files.user.Hooks[name])
		}
		if n > 0 || teamUnreadable(files, hookEvent{name: name}) {
			out.Events = append(out.Events, name)
		}
	}
	return out
}

// teamUnreadable reports whether team policy, which may hold hooks that guard prompts, could not be read for an
// event that sends the user's words on: such a prompt is blocked (fail closed), as every action is.
func teamUnreadable(files policyFiles, ev hookEvent) bool {
	return files.teamErr != nil && ev.name == policy.HookUserPromptSubmit
}

// runHooks runs the hooks of ev in the call c: team policy's, the user's, then the project's (after their consent),
// one after another, until one blocks. Team hooks always run; nothing the user or the project says removes them.
func (s *Service) runHooks(ctx context.Context, g *grant, ev hookEvent) (*hookOutcome, error) {
	c := g.c
	sess := c.sess
	sess.mu.Lock()
	files := sess.files
	sess.mu.Unlock()
	team, user, project := hooksFor(files, ev)
	out := &hookOutcome{}
	if len(team)+len(user)+len(project) == 0 {
		return out, nil
	}
	if len(project) > 0 {
		ok, err := s.projectHooksAllowed(g, projectHooks(files), ev.ask, out)
		if err != nil {
			return nil, err
		}
		if !ok {
			project = nil
		}
	}
	// The call's mode, not only the session's: a plan-mode subagent's hooks run with the project read-only too.
	st := s.callState(c)
	input := map[string]any{
		"session_id":      sess.id,
		"transcript_path": "",
		"cwd":             sess.root,
		"hook_event_name": ev.name,
		"permission_mode": permissionMode(st.Mode),
	}
	for k, v := range ev.input {
		input[k] = v
	}
	stdin, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("encode the hook's input: %w", err)
	}
	for _, list := range []struct {
		source string
		hooks  []policy.HookCommand
	}{{hookTeam, team}, {hookUser, user}, {hookProject, project}} {
		for _, h := range list.hooks {
			a, err := s.runHook(ctx, c, st, h, list.source, ev.name, stdin)
			if err != nil {
				return nil, err
			}
			out.ran++
			out.add(a)
			if out.blocked() || ctx.Err() != nil {
				return out, nil
			}
		}
	}
	return out, nil
}

func permissionMode(m policy.Mode) string {
	if m == policy.ModePlan {
		return "plan"
	}
	return "default"
}

// add folds one hook's answer into the outcome: a deny (or a block) wins, then an ask, then an allow.
func (o *hookOutcome) add(a hookAnswer) {
	o.context = append(o.context, a.context...)
	if a.notice != "" {
		o.notices = append(o.notices, a.notice)
	}
	if a.stop {
		o.stop, o.stopReason = true, a.stopReason
	}
	switch a.decision {
	case "deny":
		o.decision, o.reason = "deny", a.reason
	case "ask":
		if o.decision != "deny" {
			o.decision, o.reason = "ask", a.reason
		}
	case "allow":
		if o.decision == "" {
			o.decision, o.reason = "allow", a.reason
		}
	}
}

// projectHooksAllowed says whether the project's hooks may run: once the user said yes to exactly these
// definitions (pinned by their hash in consents.json); asked at the first event that would run them while the user
// is there, and not again in the session after a no. Defends against a repository that runs its programs at every
// prompt of a user who never chose them.
func (s *Service) projectHooksAllowed(g *grant, hooks policy.Hooks, ask bool, out *hookOutcome) (bool, error) {
	c := g.c
	sess := c.sess
	hash := hooks.Hash()
	path := filepath.Join(s.cfg.Home, "consents.json")
	s.consentMu.Lock()
	defer s.consentMu.Unlock()
	sess.mu.Lock()
	state := sess.hooks
	sess.mu.Unlock()
	if state.asked {
		return state.granted, nil
	}
	cons, err := s.loadConsents(path)
	if err != nil {
		return false, err
	}
	if cons.Granted(commands.ConsentHook, hookConsentName, sess.root, hash) {
		sess.mu.Lock()
		sess.hooks = hookConsent{asked: true, granted: true}
		sess.mu.Unlock()
		return true, nil
	}
	if !ask {
		return false, nil
	}
	req := policy.Request{Kind: policy.KindConsent, Tool: commands.ConsentHook, ConsentKind: commands.ConsentHook,
		ConsentName: hookConsentName}
	cg, res, err := s.decideAs(c, g.op, commands.ConsentHook, req)
	if err != nil {
		return false, err
	}
	if res == nil {
		q := &execv1.Question{
			Title:   "Run the project's hooks?",
			Preview: "This project's settings run these commands (in the sandbox) at points of every turn:\n\n" + describeHooks(hooks),
			Consent: true,
		}
		res, err = cg.confirm(q)
		if err != nil {
			return false, err
		}
	}
	granted := res == nil
	sess.mu.Lock()
	sess.hooks = hookConsent{asked: true, granted: granted}
	sess.mu.Unlock()
	if !granted {
		out.notices = append(out.notices, "Garuda: the project's hooks do not run in this session: they were not allowed.")
		return false, nil
	}
	cons.Grant(commands.ConsentHook, hookConsentName, sess.root, hash)
	if err := s.record(audit.Record{Session: sess.id, Event: audit.EventConsent, Op: commands.ConsentHook, Input: hookConsentName,
		Detail: map[string]string{"hash": hash, "root": sess.root}}, true); err != nil {
		return false, err
	}
	if err := homefile.WriteAtomic(path, cons.Marshal(), 0o600); err != nil {
		return false, fmt.Errorf("save the consent: %w", err)
	}
	return true, nil
}

// describeHooks lists hook definitions for a question, one line per hook.
func describeHooks(h policy.Hooks) string {
	var b strings.Builder
	for _, ev := range policy.HookEvents {
		for _, m := range h[ev] {
			for _, c := range m.Hooks {
				on := ev
				if m.Matcher != "" && m.Matcher != "*" {
					on += " (" + m.Matcher + ")"
				}
				fmt.Fprintf(&b, "%s: %s\n", on, c.Command)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// runHook runs one hook in the command sandbox, under the command guard, with the event's JSON on its stdin, and
// audits the run (hook, event, exit code, duration, decision).
func (s *Service) runHook(ctx context.Context, c *call, st *policy.State, h policy.HookCommand, source, event string,
	stdin []byte) (hookAnswer, error) {
	started := time.Now()
	spec, err := s.sandboxSpec(c.sess, st, h.Command, h.Timeout, false)
	if err == nil {
		// The network as the network policy allows, through the broker's proxy: rules only, a hook asks nothing.
		var px *commandProxy
		if px, err = s.startProxy(ctx, c.sess, s.commandNetwork(nil, nil, c.sess, h.Command)); err == nil {
			defer px.stop()
			spec.Proxy = px.socket
		}
	}
	var a hookAnswer
	if err == nil {
		spec.Reveal = s.hookReveal(spec.Hidden)
		spec.Env = append(spec.Env, "CLAUDE_PROJECT_DIR="+c.sess.root, "GARUDA_PROJECT_DIR="+c.sess.root)
		spec.Stdin = bytes.NewReader(stdin)
		stdout := &boundedBuffer{max: maxHookStdout}
		spec.Stdout = stdout
		res, undone, rerr := s.runGuarded(ctx, c, st, policy.OpHook, spec)
		var fail *runFailure
		switch {
		case errors.As(rerr, &fail):
			err = fail.err
		case rerr != nil:
			return a, rerr
		default:
			a = readAnswer(event, h, res, stdout.Bytes())
			if out := bytes.TrimSpace(stdout.Bytes()); len(out) > 0 && len(a.context) == 0 && a.decision == "" {
				// Plain output of an event that gives the model none goes to the broker's log (never the audit log,
				// which keeps no file contents).
				s.cfg.Log.Info("hook output", "session", c.sess.id, "event", event, "hook", short(h.Command),
					"output", string(out[:min(len(out), 1024)]))
			}
			for _, l := range undone {
				a.notices = append(a.notices, "Garuda: "+l)
			}
		}
	}
	if err != nil {
		a = hookAnswer{failed: true, notice: fmt.Sprintf("Garuda: the hook %q could not run: %v", short(h.Command), err)}
	}
	if a.failed && h.FailClosed && source == hookTeam {
		// A team hook that fails closed blocks what it guards when it cannot say yes: defends against a broken or
		// hung hook silently turning a team's check off.
		a.decision = "deny"
		a.reason = fmt.Sprintf("the team hook %q failed, and team policy blocks the action when it does (%s)", short(h.Command),
			strings.TrimPrefix(a.notice, "Garuda: "))
	}
	if len(a.notices) > 0 {
		a.notice = strings.Join(append(nonEmpty(a.notice), a.notices...), "\n")
	}
	code := a.exit
	if err := s.record(audit.Record{Session: c.sess.id, Event: audit.EventHook, Op: policy.OpHook, Input: h.Command, ExitCode: &code,
		DurationMS: time.Since(started).Milliseconds(), Verdict: a.decision, Reason: a.reason,
		Detail: map[string]string{"event": event, "source": source, "timed_out": strconv.FormatBool(a.timedOut)}}, true); err != nil {
		return a, err
	}
	return a, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// hookReveal is what a hook sees of what a command may not: $GARUDA_HOME/hooks/, where users keep their hook
// scripts, read-only. The rest of $GARUDA_HOME (keys, trust, sessions, audit, and whatever appears in it while the
// hook runs, credentials `garuda setup` writes then included) stays hidden whole: the sandbox covers the folder and
// binds hooks/ back (sandbox.Spec.Reveal).
func (s *Service) hookReveal(hidden []string) []string {
	if !slices.Contains(hidden, s.cfg.Home) {
		return nil // not there to hide: nothing to reveal either
	}
	return []string{filepath.Join(s.cfg.Home, "hooks")}
}

// boundedBuffer keeps the first max bytes written to it and drops the rest, never blocking the writer.
type boundedBuffer struct {
	max  int
	buf  bytes.Buffer
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	if b.buf.Len()+len(p) > b.max {
		b.over = true
	}
	return len(p), nil
}

func (b *boundedBuffer) Bytes() []byte { return b.buf.Bytes() }

// short is a command as a notice names it: its first line, at most 60 characters.
func short(cmd string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(cmd), "\n")
	if len(line) > 60 {
		line = line[:57] + "..."
	}
	return line
}
