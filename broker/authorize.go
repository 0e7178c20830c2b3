package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/commands"
	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/broker/permit"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// state is the policy state of a session at this moment.
func (s *Service) state(sess *session) *policy.State {
	var pointed []string
	if sess.guard != nil {
		pointed, _ = sess.guard.Pointed()
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	st := &policy.State{
		Root:           sess.root,
		RealRoot:       sess.fs.Real(),
		Home:           s.cfg.Home,
		UserHome:       s.userHome,
		OutputDir:      sess.outputDir,
		Mode:           modeOf(sess.mode),
		Team:           sess.files.team,
		TeamErr:        sess.files.teamErr,
		User:           sess.files.user,
		Project:        sess.files.project,
		ProjectTrusted: sess.files.trusted,
		SessionRules:   append([]policy.Rule(nil), sess.rules...),
		Pointed:        pointed,
	}
	return st
}

// callState is the policy state a call is decided in: the session's, in plan mode when the call asks for it (a
// subagent's narrower mode). Defends against a subagent that would do more than its agent allows: the narrowing
// is the broker's, not the front end's to enforce.
func (s *Service) callState(c *call) *policy.State {
	st := s.state(c.sess)
	if c.start.GetMode() == execv1.Mode_MODE_PLAN {
		st.Mode = policy.ModePlan
	}
	return st
}

// refuseWritableInPlan is the answer to a plan-mode call (a subagent's narrower mode) that would reach a program
// the session started with the project writable (a stdio MCP server, a background process), audited as the mode's
// deny. Defends against a plan-mode subagent writing through what its build-mode agent started.
func (s *Service) refuseWritableInPlan(c *call, op string, req policy.Request, what string) (*execv1.Result, error) {
	d := policy.Decision{Verdict: policy.Deny, Rule: "mode", Reason: "plan mode: " + what + " runs with the project writable " +
		"(it started in build mode), so a plan-mode call cannot use it"}
	if err := s.auditDecision(c, op, false, req, d); err != nil {
		return nil, err
	}
	return denied(d.Reason), nil
}

func modeOf(m execv1.Mode) policy.Mode {
	if m == execv1.Mode_MODE_PLAN {
		return policy.ModePlan
	}
	return policy.ModeBuild
}

func choiceOf(c policy.Choice) execv1.Choice {
	switch c {
	case policy.ChoiceOnce:
		return execv1.Choice_CHOICE_ONCE
	case policy.ChoiceSession:
		return execv1.Choice_CHOICE_SESSION
	}
	return execv1.Choice_CHOICE_DENY
}

// decide decides req for op and audits the decision. It returns the grant that carries the call on, or the Result
// of a deny. Nothing of the operation's target has been touched yet: a denied request's answer, timing and records
// are the same whatever the target holds, whether it exists and whatever it is.
func (s *Service) decide(c *call, op *operation, req policy.Request) (*grant, *execv1.Result, error) {
	return s.decideAs(c, op, op.name, req)
}

// decideAs is decide with the audit log's op given: a consent asked inside an operation is recorded as its kind
// (command, skill).
func (s *Service) decideAs(c *call, op *operation, name string, req policy.Request) (*grant, *execv1.Result, error) {
	d, p := permit.Decide(req, s.callState(c))
	// What nested repositories point git at is known once the guard has walked the root (the first command does).
	// A write or an edit the policy allows before that is decided again after a walk: the walk opens folders, so it
	// is taken only for a request already allowed (a denied or asked one opens nothing first), and the second
	// decision can only be stricter.
	if d.Verdict == policy.Allow && (req.Kind == policy.KindWrite || req.Kind == policy.KindEdit) && c.sess.guard.Unscanned() {
		// The walk leaves out what the read policy hides, as before a command (the same options: the first command
		// does not walk whole again): defends against an answer that depends on a hidden folder's repositories.
		st := s.state(c.sess)
		c.sess.guard.Configure(s.guardOptions(c.sess, st, s.secrets(st)))
		c.sess.guard.Scan()
		d, p = permit.Decide(req, s.callState(c))
	}
	if err := s.auditDecision(c, name, op.changes, req, d); err != nil {
		return nil, nil, err
	}
	if d.Verdict == policy.Deny {
		reason := d.Reason
		if hint := policy.NetworkHint(req, d); req.Kind == policy.KindNetwork && hint != "" {
			reason += "; " + hint
		}
		return nil, denied(reason), nil
	}
	return &grant{s: s, c: c, op: op, req: req, d: d, p: p}, nil, nil
}

// auditDecision records a decision; for an operation that changes something, on disk before it goes ahead.
func (s *Service) auditDecision(c *call, op string, changes bool, req policy.Request, d policy.Decision) error {
	return s.record(audit.Record{Session: c.sess.id, Event: audit.EventDecision, Op: op, Input: summary(req),
		Verdict: d.Verdict.String(), Rule: d.Rule, Reason: d.Reason}, changes)
}

func denied(reason string) *execv1.Result {
	return &execv1.Result{Status: execv1.Status_STATUS_DENIED, Content: "Denied: " + reason + "."}
}

// ask asks the question q of an ask decision d and audits the answer; an answer that cannot be audited is not acted
// on. It returns nil when the user allowed it (and adds the session rule for "Allow for this session"), else the
// Result that ends the call (denied or cancelled).
func (s *Service) ask(c *call, req policy.Request, d policy.Decision, q *execv1.Question) (*execv1.Result, error) {
	q.Warning = mergeWarnings(d.Warning, q.Warning)
	q.Kind = string(req.Kind)
	q.OutsideRoot = policy.Outside(req, s.callState(c))
	q.Protected = policy.ProtectedTarget(req, s.callState(c))
	q.OutsideSandbox = req.Kind == policy.KindCommand && !req.Sandboxed
	// The server, the host and the consent's kind come from the decided request, never from the question's text:
	// defends against a title worded to make garuda run's --allow-mcp, --allow-host or --allow-web-search match.
	switch {
	case req.Kind == policy.KindMCPTool:
		q.Server = req.Server
	case req.Kind == policy.KindConsent && req.ConsentKind == commands.ConsentMCPServer:
		q.Server = req.ConsentName
	case req.Kind == policy.KindNetwork:
		q.Host, _ = policy.NormHost(req.Host) // the spelling rules match; Decide refused a host that has none
	}
	if req.Kind == policy.KindConsent {
		q.ConsentKind = req.ConsentKind
	}
	if q.Preview == "" {
		q.Preview = q.Title
	}
	q.Preview = joinLines(q.Preview, "Why Garuda asks: "+d.Reason)
	q.Hidden = q.Hidden || fsops.HasHidden([]byte(q.Preview)) || fsops.HasHidden([]byte(q.Title)) || lineTricks(q.Title, q.Preview)
	for _, ch := range d.Choices {
		q.Choices = append(q.Choices, choiceOf(ch))
	}
	choice, err := c.ask(q)
	ans := audit.Record{Session: c.sess.id, Event: audit.EventAnswer, Op: req.Tool, Input: summary(req), Rule: d.Rule}
	switch {
	case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ErrShutdown) || c.ctx.Err() != nil):
		ans.AnsweredBy = "cancel"
		ans.Verdict = "deny"
		if rerr := s.record(ans, true); rerr != nil {
			return nil, rerr
		}
		if cause := context.Cause(c.ctx); errors.Is(cause, ErrProtocol) {
			return nil, cause
		}
		return cancelled(), nil
	case err != nil:
		return nil, err
	}
	ans.AnsweredBy = "user: " + choiceName(choice)
	ans.Verdict = "allow"
	if choice == execv1.Choice_CHOICE_DENY {
		ans.Verdict = "deny"
	}
	if err := s.record(ans, true); err != nil {
		return nil, err
	}
	switch choice {
	case execv1.Choice_CHOICE_ONCE:
		return nil, nil
	case execv1.Choice_CHOICE_SESSION:
		if rule, ok := policy.SessionRule(req, s.callState(c)); ok {
			c.sess.mu.Lock()
			c.sess.rules = append(c.sess.rules, rule)
			c.sess.mu.Unlock()
		}
		return nil, nil
	}
	return &execv1.Result{Status: execv1.Status_STATUS_DENIED, Content: "The user denied this: " + q.Title + "."}, nil
}

func cancelled() *execv1.Result {
	return &execv1.Result{Status: execv1.Status_STATUS_CANCELLED, Content: "Cancelled."}
}

// choiceNames and statusNames are the audit log's words for an answer and an end (the audit format is an interface:
// they stay as they are); an answer not listed is "deny", a status not listed "unknown".
var (
	choiceNames = map[execv1.Choice]string{execv1.Choice_CHOICE_ONCE: "once", execv1.Choice_CHOICE_SESSION: "session"}
	statusNames = map[execv1.Status]string{execv1.Status_STATUS_COMPLETED: "completed", execv1.Status_STATUS_FAILED: "failed",
		execv1.Status_STATUS_DENIED: "denied", execv1.Status_STATUS_CANCELLED: "cancelled"}
)

func choiceName(c execv1.Choice) string { return cmp.Or(choiceNames[c], "deny") }

func statusName(st execv1.Status) string { return cmp.Or(statusNames[st], "unknown") }

// summary is what the audit log keeps of a request: never file contents or keys; command text yes.
func summary(req policy.Request) string {
	switch {
	case req.Command != "":
		return req.Command
	case req.Path != "":
		return req.Path
	case req.Host != "":
		return req.Host
	case req.ConsentName != "":
		return req.ConsentKind + " " + req.ConsentName
	}
	return ""
}

// record writes an audit record: for actions that change something, on disk before they go ahead.
func (s *Service) record(r audit.Record, commit bool) error {
	log, err := s.auditLog()
	if err != nil {
		return fmt.Errorf("the audit log cannot be written, so nothing is done: %w", err)
	}
	if commit {
		err = log.Commit(r)
	} else {
		err = log.Note(r)
	}
	if err != nil {
		return fmt.Errorf("the audit log cannot be written, so nothing is done: %w", err)
	}
	return nil
}

// execution audits the end of an operation. The record is chained and written at once, its fsync grouped with the
// next few milliseconds' (Note): what gates an action is its decision, answer or consent, each on disk before the
// action goes ahead; the end of one that already happened holds nothing up (an mcp_start with no server paid an
// fsync of its own at every prompt). A failed fsync still fails every later record, and so every later action.
func (s *Service) execution(c *call, op *operation, input string, res *execv1.Result, started time.Time) error {
	r := audit.Record{Session: c.sess.id, Event: audit.EventExecution, Op: op.name, Input: input,
		Status: statusName(res.GetStatus()), DurationMS: time.Since(started).Milliseconds()}
	if op.kind == policy.KindCommand {
		code := int(res.GetExitCode())
		r.ExitCode = &code
	}
	return s.record(r, false)
}

func joinLines(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// lineTricks reports what would make a question show other than what is done: a carriage return that is not a line
// end (it rewrites a line in view), a line break in a title that is not a command's, or a preview that pushes part
// of itself out of sight. A multi-line command is none of these: its lines are shown (the title with ⏎).
func lineTricks(title, preview string) bool {
	// A command's lines are what runs, each shown in the preview; a line break anywhere else in a title (a path
	// with a newline) makes up a line.
	if !strings.HasPrefix(title, "$ ") && strings.ContainsAny(title, "\r\n") {
		return true
	}
	return strings.ContainsRune(strings.ReplaceAll(title, "\r\n", "\n"), '\r') ||
		strings.ContainsRune(strings.ReplaceAll(preview, "\r\n", "\n"), '\r') || outOfView(preview)
}

// outOfView reports whether a preview pushes part of itself out of sight: a run of spaces wide enough to move the
// rest of a line past the edge of a question box, or a run of blank lines that moves the rest below it.
func outOfView(preview string) bool {
	const wideSpaces, blankLines = 40, 20
	blanks := 0
	for _, line := range strings.Split(preview, "\n") {
		if strings.TrimSpace(line) == "" {
			blanks++
			continue
		}
		if blanks >= blankLines {
			return true
		}
		blanks = 0
		if i := strings.Index(line, strings.Repeat(" ", wideSpaces)); i >= 0 && strings.TrimSpace(line[i:]) != "" {
			return true
		}
	}
	return false
}

// mergeWarnings is the decision's warning lines, then the operation's own that say something else: one line per
// subject ("Outside the sandbox: …" once), so that a question carries no near-identical warnings.
func mergeWarnings(decision, op string) string {
	out := decision
	for _, line := range strings.Split(op, "\n") {
		subject, _, _ := strings.Cut(line, ":")
		if line == "" || strings.Contains("\n"+out, "\n"+subject+":") || strings.Contains("\n"+out+"\n", "\n"+line+"\n") {
			continue
		}
		out = joinLines(out, line)
	}
	return out
}
