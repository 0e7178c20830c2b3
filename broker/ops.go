package broker

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/garuda-dev/garuda/broker/permit"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// operation is one entry of the broker's operation table: everything a Call can do is listed in operations, and
// do runs every entry through the same pipeline:
//
//	check the request (no I/O) → decide → on deny: audit the decision, answer → only then open, read, match or
//	preview, through the permit the decision gave → ask if the decision says so → act → audit.
//
// The functions that open a path (package fsops) take the permit, which only package permit makes from a
// decision: an operation cannot touch its target before the policy has decided on it.
type operation struct {
	field   protoreflect.Name // the Start.op field that carries its request
	name    string            // its op in the audit log and its tool in the settings grammar (policy.Op*)
	kind    policy.Kind       // what the policy decides
	changes bool              // it changes something: its records are on disk before it goes ahead
	// check decodes and checks the request without any I/O and says what to decide and how to go on.
	check func(s *Service, c *call) (*request, error)
}

// request is one checked operation.
type request struct {
	policy policy.Request // what the policy decides; a zero Kind means the operation decides inside run (see below)
	input  string         // what the audit log keeps of it: never file contents or keys
	quiet  bool           // nothing was done and nothing is recorded (a hook event with no hooks)
	// run carries the operation out once the decision is not a deny. It may open, read or match its target only
	// through g's permit, and asks through g.confirm.
	run func(ctx context.Context, g *grant) (*execv1.Result, error)
}

// operations is the table. resolve_command, skill and load_agent have no target of the model's choosing: they read the
// command and skill files, each decided by the read policy before it is opened (commandSet), and a project's own
// command or skill is a consent decision of its own, asked in run. mcp_start is the same for MCP servers: each
// server's consent is decided (and asked) in run, before it starts.
var operations = []operation{
	{field: "read_file", name: policy.OpReadFile, kind: policy.KindRead, check: checkReadFile},
	{field: "write_file", name: policy.OpWriteFile, kind: policy.KindWrite, changes: true, check: checkWriteFile},
	{field: "edit_file", name: policy.OpEditFile, kind: policy.KindEdit, changes: true, check: checkEditFile},
	{field: "glob", name: policy.OpGlob, kind: policy.KindSearch, check: checkGlob},
	{field: "grep", name: policy.OpGrep, kind: policy.KindSearch, check: checkGrep},
	{field: "bash", name: policy.OpBash, kind: policy.KindCommand, changes: true, check: checkBash},
	{field: "attach_mention", name: policy.OpAttachMention, kind: policy.KindRead, check: checkAttachMention},
	{field: "resolve_command", name: policy.OpResolveCommand, kind: policy.KindConsent, changes: true, check: checkResolveCommand},
	{field: "load_skill", name: policy.OpSkill, kind: policy.KindConsent, changes: true, check: checkLoadSkill},
	{field: "hook_event", name: policy.OpHook, kind: policy.KindConsent, changes: true, check: checkHookEvent},
	{field: "web_fetch", name: policy.OpWebFetch, kind: policy.KindNetwork, check: checkWebFetch},
	{field: "process_manager", name: policy.OpProcessManager, kind: policy.KindCommand, changes: true, check: checkProcess},
	{field: "load_agent", name: policy.OpLoadAgent, kind: policy.KindConsent, changes: true, check: checkLoadAgent},
	{field: "mcp_start", name: policy.OpMCPStart, kind: policy.KindConsent, changes: true, check: checkMCPStart},
	{field: "mcp_call", name: policy.OpMCPCall, kind: policy.KindMCPTool, changes: true, check: checkMCPCall},
	{field: "web_search_consent", name: policy.OpWebSearch, kind: policy.KindConsent, check: checkWebSearchConsent},
	{field: "mcp_resource", name: policy.OpMCPResource, kind: policy.KindRead, check: checkMCPResource},
}

// operationOf finds the table's entry for a Start.
func operationOf(start *execv1.Start) (*operation, error) {
	fd := start.ProtoReflect().WhichOneof(start.ProtoReflect().Descriptor().Oneofs().ByName("op"))
	if fd == nil {
		return nil, fmt.Errorf("the start names no operation: %w", ErrBadRequest)
	}
	for i := range operations {
		if operations[i].field == fd.Name() {
			return &operations[i], nil
		}
	}
	return nil, fmt.Errorf("operation %s: %w", fd.Name(), ErrBadRequest)
}

// do runs the call's operation through the pipeline and audits its end.
func (s *Service) do(ctx context.Context, c *call) (*execv1.Result, error) {
	started := time.Now()
	op, err := operationOf(c.start)
	if err != nil {
		return nil, err
	}
	r, err := op.check(s, c)
	if err != nil {
		return nil, err // a request the front end should not have sent: nothing was decided or done
	}
	var res *execv1.Result
	switch {
	case r.policy.Kind == "":
		res, err = r.run(ctx, &grant{s: s, c: c, op: op})
	default:
		g, deniedRes, derr := s.decide(c, op, r.policy)
		switch {
		case derr != nil:
			err = derr
		case deniedRes != nil:
			res = deniedRes
		default:
			// A model's tool call runs between its PreToolUse and PostToolUse hooks: after a deny has answered,
			// before any question.
			res, err = s.runTool(ctx, g, r)
		}
	}
	if err != nil {
		return nil, err
	}
	if r.quiet {
		return res, nil
	}
	if res.Status == execv1.Status_STATUS_UNSPECIFIED {
		res.Status = execv1.Status_STATUS_COMPLETED
	}
	if err := s.execution(c, op, r.input, res, started); err != nil {
		return nil, err
	}
	return res, nil
}

// grant is a decided request on its way: the decision, the permit it gives, and the means to ask.
type grant struct {
	s   *Service
	c   *call
	op  *operation
	req policy.Request
	d   policy.Decision
	p   permit.Permit
}

// confirm makes sure the permit acts: at once when the decision was allow; for an ask, after the user allowed q
// (audited). It returns the Result that ends the call when the user did not allow it.
// Either way the front end then hears that the call started.
func (g *grant) confirm(q *execv1.Question) (*execv1.Result, error) {
	if g.p.Acts() {
		g.c.started()
		return nil, nil
	}
	res, err := g.s.ask(g.c, g.req, g.d, q)
	if res != nil || err != nil {
		return res, err
	}
	g.p = permit.Granted(g.p)
	g.c.started()
	return nil, nil
}

// review asks q, a second question about the same request, once its first question was answered without content
// (the target could not be read before it): the diff of a write outside the project folder, say.
func (g *grant) review(q *execv1.Question) (*execv1.Result, error) {
	d := policy.Decision{Verdict: policy.Ask, Rule: g.d.Rule, Reason: "review the change before it is made",
		Choices: []policy.Choice{policy.ChoiceOnce, policy.ChoiceDeny}, Warning: g.d.Warning}
	return g.s.ask(g.c, g.req, d, q)
}
