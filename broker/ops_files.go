package broker

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// maxDiff is the most old and new text together that a question carries as a diff; above it, only the preview.
const maxDiff = 1 << 20

func failed(err error) *execv1.Result {
	return &execv1.Result{Status: execv1.Status_STATUS_FAILED, Content: err.Error()}
}

func locations(ls ...fsops.Location) []*execv1.Location {
	out := make([]*execv1.Location, 0, len(ls))
	for _, l := range ls {
		out = append(out, &execv1.Location{Path: l.Path, Line: int32(l.Line)})
	}
	return out
}

// realDenied decides a path outside the root again as the kernel will resolve its folder, so that a folder that
// is a symlink cannot carry a read or write into a place the rules deny (defends against a link to $GARUDA_HOME).
// Inside the root, openat2 refuses any link that leaves it, so the lexical path is the real one.
func (s *Service) realDenied(c *call, req policy.Request, inside bool) *execv1.Result {
	if inside {
		return nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(req.Path))
	if err != nil {
		return nil // a folder that does not exist fails at open
	}
	real := filepath.Join(dir, filepath.Base(req.Path))
	if real == req.Path {
		return nil
	}
	req.Path = real
	if d := policy.Decide(req, s.state(c.sess)); d.Verdict == policy.Deny {
		return &execv1.Result{Status: execv1.Status_STATUS_DENIED, Content: fmt.Sprintf("Denied: the path resolves to %s: %s.", real, d.Reason)}
	}
	return nil
}

func (s *Service) readFile(ctx context.Context, c *call, op *execv1.ReadFile) (*execv1.Result, error) {
	abs, inside := c.sess.fs.Abs(op.GetPath())
	req := policy.Request{Kind: policy.KindRead, Tool: "read_file", Path: abs}
	if res := s.realDenied(c, req, inside); res != nil {
		return res, nil
	}
	if res, err := s.authorize(c, req, &execv1.Question{Title: "Read " + abs, Preview: "Read " + abs}); res != nil || err != nil {
		return res, err
	}
	r, err := c.sess.fs.Read(ctx, fsops.ReadRequest{Path: abs, Offset: int(op.GetOffset()), Limit: int(op.GetLimit()), Outside: !inside,
		Recheck: s.allowRead(s.state(c.sess))})
	if err != nil {
		return failed(err), nil
	}
	text := r.Text
	if r.Note != "" {
		text = joinLines(text, r.Note)
	}
	return &execv1.Result{Content: text, Locations: locations(r.Location)}, nil
}

// attachMention reads a file the user mentioned, with the normal read check. It asks nothing: a mention of a file
// the rules do not simply allow is not attached.
func (s *Service) attachMention(ctx context.Context, c *call, op *execv1.AttachMention) (*execv1.Result, error) {
	abs, inside := c.sess.fs.Abs(op.GetPath())
	st := s.state(c.sess)
	d := policy.Decide(policy.Request{Kind: policy.KindRead, Tool: "read_file", Path: abs}, st)
	if err := s.record(auditDecision(c, "attach_mention", abs, d), false); err != nil {
		return nil, err
	}
	if d.Verdict != policy.Allow || !inside {
		return &execv1.Result{Status: execv1.Status_STATUS_DENIED, Content: fmt.Sprintf("%s was not attached: %s", op.GetPath(), d.Reason)}, nil
	}
	r, err := c.sess.fs.Read(ctx, fsops.ReadRequest{Path: abs, Recheck: s.allowRead(st)})
	if err != nil {
		return failed(err), nil
	}
	return &execv1.Result{Content: joinLines(r.Text, r.Note), Locations: locations(r.Location)}, nil
}

func (s *Service) writeFile(ctx context.Context, c *call, path string, edit *execv1.EditFile, content string) (*execv1.Result, error) {
	fsr := c.sess.fs
	abs, inside := fsr.Abs(path)
	var p *fsops.Pending
	var err error
	tool, verb, kind := "write_file", "Write", policy.KindWrite
	switch {
	case edit != nil && inside:
		p, err = fsr.PrepareEdit(abs, edit.GetOldString(), edit.GetNewString(), edit.GetReplaceAll())
	case edit != nil:
		p, err = fsr.PrepareEditOutside(abs, edit.GetOldString(), edit.GetNewString(), edit.GetReplaceAll())
	case inside:
		p, err = fsr.PrepareWrite(abs, []byte(content))
	default:
		p, err = fsr.PrepareWriteOutside(abs, []byte(content))
	}
	if edit != nil {
		tool, verb, kind = "edit_file", "Edit", policy.KindEdit
	}
	if err != nil {
		return failed(err), nil
	}
	if res := s.realDenied(c, policy.Request{Kind: kind, Tool: tool, Path: abs}, inside); res != nil {
		return res, nil
	}
	q := &execv1.Question{Title: verb + " " + abs, Preview: changePreview(abs, p), Hidden: p.Hidden}
	// A diff is text: a file that is not valid UTF-8 is shown by the preview alone, which says so.
	if len(p.Old)+len(p.New) <= maxDiff && utf8.Valid(p.Old) && utf8.Valid(p.New) {
		q.Diff = &execv1.Diff{Path: abs, OldText: string(p.Old), NewText: string(p.New), NewFile: !p.Existed}
	}
	if res, err := s.authorize(c, policy.Request{Kind: kind, Tool: tool, Path: abs}, q); res != nil || err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return &execv1.Result{Status: execv1.Status_STATUS_CANCELLED, Content: "Cancelled."}, nil
	}
	newHash := sha256.Sum256(p.New)
	err = fsr.Commit(p, func(abs string, old []byte, existed bool) error {
		_, err := s.undos.Snapshot(c.sess.id, abs, old, existed, newHash)
		return err
	})
	if err != nil {
		return failed(err), nil
	}
	msg := fmt.Sprintf("Wrote %d bytes to %s.", len(p.New), abs)
	if !p.Existed {
		msg = fmt.Sprintf("Created %s (%d bytes).", abs, len(p.New))
	}
	if edit != nil {
		msg = fmt.Sprintf("Edited %s: %d replacement(s).", abs, p.Matches)
	}
	return &execv1.Result{Content: msg, Locations: locations(fsops.Location{Path: abs, Line: firstChangedLine(p.Old, p.New)})}, nil
}

// allowRead is the filter of glob and grep: a file is listed only when reading it is simply allowed.
func (s *Service) allowRead(st *policy.State) func(string) bool {
	return func(abs string) bool {
		return policy.Decide(policy.Request{Kind: policy.KindRead, Tool: "read_file", Path: abs}, st).Verdict == policy.Allow
	}
}

func (s *Service) search(ctx context.Context, c *call, tool, path string, run func(st *policy.State) (*fsops.ListResult, error)) (*execv1.Result, error) {
	abs, _ := c.sess.fs.Abs(path)
	if path == "" {
		abs = c.sess.root
	}
	req := policy.Request{Kind: policy.KindSearch, Tool: tool, Path: abs}
	if res, err := s.authorize(c, req, &execv1.Question{Title: "Search " + abs}); res != nil || err != nil {
		return res, err
	}
	r, err := run(s.state(c.sess))
	if err != nil {
		return failed(err), nil
	}
	text := r.Text
	if r.Note != "" {
		text = joinLines(text, r.Note)
	}
	return &execv1.Result{Content: text, Locations: locations(r.Locations...)}, nil
}

func auditDecision(c *call, op, input string, d policy.Decision) audit.Record {
	return audit.Record{Session: c.sess.id, Event: "decision", Op: op, Input: input, Verdict: d.Verdict.String(), Rule: d.Rule, Reason: d.Reason}
}

// do runs the call's operation and audits its end.
func (s *Service) do(ctx context.Context, c *call) (*execv1.Result, error) {
	started := time.Now()
	var res *execv1.Result
	var err error
	var name, input string
	switch op := c.start.GetOp().(type) {
	case *execv1.Start_ReadFile:
		name, input = "read_file", op.ReadFile.GetPath()
		res, err = s.readFile(ctx, c, op.ReadFile)
	case *execv1.Start_WriteFile:
		name, input = "write_file", op.WriteFile.GetPath()
		res, err = s.writeFile(ctx, c, op.WriteFile.GetPath(), nil, op.WriteFile.GetContent())
	case *execv1.Start_EditFile:
		name, input = "edit_file", op.EditFile.GetPath()
		res, err = s.writeFile(ctx, c, op.EditFile.GetPath(), op.EditFile, "")
	case *execv1.Start_Glob:
		g := op.Glob
		name, input = "glob", g.GetPattern()
		res, err = s.search(ctx, c, "glob", g.GetPath(), func(st *policy.State) (*fsops.ListResult, error) {
			return c.sess.fs.Glob(ctx, g.GetPattern(), g.GetPath(), s.allowRead(st))
		})
	case *execv1.Start_Grep:
		g := op.Grep
		name, input = "grep", g.GetPattern()
		res, err = s.search(ctx, c, "grep", g.GetPath(), func(st *policy.State) (*fsops.ListResult, error) {
			return c.sess.fs.Grep(ctx, fsops.GrepRequest{Pattern: g.GetPattern(), Path: g.GetPath(), Glob: g.GetGlob(),
				CaseInsensitive: g.GetCaseInsensitive(), Context: int(g.GetContext()), OutputMode: g.GetOutputMode()}, s.allowRead(st))
		})
	case *execv1.Start_Bash:
		name, input = "bash", op.Bash.GetCommand()
		res, err = s.bash(ctx, c, op.Bash)
	case *execv1.Start_AttachMention:
		name, input = "attach_mention", op.AttachMention.GetPath()
		res, err = s.attachMention(ctx, c, op.AttachMention)
	case *execv1.Start_ResolveCommand:
		name, input = "resolve_command", op.ResolveCommand.GetText()
		res, err = s.resolveCommand(ctx, c, op.ResolveCommand)
	case *execv1.Start_LoadSkill:
		name, input = "skill", op.LoadSkill.GetName()
		res, err = s.loadSkill(ctx, c, op.LoadSkill)
	default:
		return nil, fmt.Errorf("operation %T: %w", c.start.GetOp(), ErrBadRequest)
	}
	if err != nil {
		return nil, err
	}
	if res.Status == execv1.Status_STATUS_UNSPECIFIED {
		res.Status = execv1.Status_STATUS_COMPLETED
	}
	if err := s.execution(c, name, input, res, started); err != nil {
		return nil, err
	}
	return res, nil
}
