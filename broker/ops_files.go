package broker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// maxDiff is the most old and new text together that a question carries as a diff; above it, only the preview.
const maxDiff = 1 << 20

// changeDiff is the diff a question about a change carries: none above maxDiff, and none for a file that is not
// valid UTF-8 (a diff is text: the preview alone shows such a change, and says so).
func changeDiff(abs string, p *fsops.Pending) *execv1.Diff {
	if len(p.Old)+len(p.New) > maxDiff || !utf8.Valid(p.Old) || !utf8.Valid(p.New) {
		return nil
	}
	return &execv1.Diff{Path: abs, OldText: string(p.Old), NewText: string(p.New), NewFile: !p.Existed}
}

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

// errEmptyPath is the check of every path operation: a path is required (what it names is the policy's to decide).
var errEmptyPath = fmt.Errorf("the path is empty: %w", ErrBadRequest)

func checkReadFile(s *Service, c *call) (*request, error) {
	op := c.start.GetReadFile()
	return checkRead(c, op.GetPath(), func(ctx context.Context, g *grant, abs string, _ bool) (*execv1.Result, error) {
		if res, err := g.confirm(&execv1.Question{Title: "Read " + abs, Preview: "Read " + abs}); res != nil || err != nil {
			return res, err
		}
		// Outside the root the open follows no symlink, and nothing behind one is looked at: defends against a
		// link into a hidden folder answering for what is there (resolving it first would).
		return s.readAnswer(ctx, c, g, fsops.ReadRequest{Offset: int(op.GetOffset()), Limit: int(op.GetLimit())}), nil
	})
}

// checkAttachMention reads a file the user mentioned, with the normal read check. It asks nothing: a mention of a
// file the rules do not simply allow, or outside the project folder, is not attached.
func checkAttachMention(s *Service, c *call) (*request, error) {
	op := c.start.GetAttachMention()
	return checkRead(c, op.GetPath(), func(ctx context.Context, g *grant, _ string, inside bool) (*execv1.Result, error) {
		if !g.p.Acts() || !inside {
			reason := g.d.Reason
			if !inside {
				reason = "it is outside the project folder"
			}
			return &execv1.Result{Status: execv1.Status_STATUS_DENIED, Content: fmt.Sprintf("%s was not attached: %s", op.GetPath(), reason)}, nil
		}
		return s.readAnswer(ctx, c, g, fsops.ReadRequest{}), nil
	})
}

// checkRead is the request of a read of path (read_file to the policy, whoever asks): its run gets the path made
// absolute and whether it lies in the project folder.
func checkRead(c *call, path string, run func(context.Context, *grant, string, bool) (*execv1.Result, error)) (*request, error) {
	if path == "" {
		return nil, errEmptyPath
	}
	abs, inside := c.sess.fs.Abs(path)
	return &request{
		policy: policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: abs},
		input:  path,
		run:    func(ctx context.Context, g *grant) (*execv1.Result, error) { return run(ctx, g, abs, inside) },
	}, nil
}

// readAnswer reads the file the grant permits, the read rules checked again on what is opened, and answers its text.
func (s *Service) readAnswer(ctx context.Context, c *call, g *grant, req fsops.ReadRequest) *execv1.Result {
	req.Recheck = s.allowRead(s.state(c.sess))
	r, err := c.sess.fs.Read(ctx, g.p, req)
	if err != nil {
		return failed(err)
	}
	return &execv1.Result{Content: joinLines(r.Text, r.Note), Locations: locations(r.Location)}
}

func checkWriteFile(s *Service, c *call) (*request, error) {
	op := c.start.GetWriteFile()
	content := []byte(op.GetContent())
	return checkChange(s, c, op.GetPath(), policy.KindWrite, func(g *grant) (*fsops.Pending, error) {
		return c.sess.fs.PrepareWrite(g.p, content)
	})
}

func checkEditFile(s *Service, c *call) (*request, error) {
	op := c.start.GetEditFile()
	// What can be told without the file is told before the policy is asked, and so the same for every file.
	switch {
	case op.GetOldString() == "":
		return nil, fmt.Errorf("old_string is empty: %w", fsops.ErrNoMatch)
	case op.GetOldString() == op.GetNewString():
		return nil, errors.New("old_string and new_string are the same; nothing to change")
	}
	return checkChange(s, c, op.GetPath(), policy.KindEdit, func(g *grant) (*fsops.Pending, error) {
		return c.sess.fs.PrepareEdit(g.p, op.GetOldString(), op.GetNewString(), op.GetReplaceAll())
	})
}

// checkChange is the pipeline of write_file and edit_file. Where the decision lets the target be read before the
// question (policy.Previewable), the file is prepared and the question shows its diff. Anywhere else the first
// question carries no content ("Edit <path>?"): only after "allow" is the file opened, matched and shown, in a
// second question with the diff. So a denied or refused request says nothing of what the file holds.
func checkChange(s *Service, c *call, path string, kind policy.Kind, prepare func(*grant) (*fsops.Pending, error)) (*request, error) {
	if path == "" {
		return nil, errEmptyPath
	}
	abs, inside := c.sess.fs.Abs(path)
	tool, verb := policy.OpWriteFile, "Write"
	if kind == policy.KindEdit {
		tool, verb = policy.OpEditFile, "Edit"
	}
	return &request{
		policy: policy.Request{Kind: kind, Tool: tool, Path: abs},
		input:  path,
		run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			staged := !g.p.Previews()
			if staged {
				title := verb + " " + abs
				if !inside {
					title += ", outside the project folder"
				}
				q := &execv1.Question{Title: title + "?", Preview: title + "? The change is shown next, before it is made."}
				if res, err := g.confirm(q); res != nil || err != nil {
					return res, err
				}
			}
			// A file the read rules hide is written blind: its review shows the new bytes only, and nothing of the
			// answer says what it held, whether it existed or what it is. Defends against write_file's review (its
			// diff, its first changed line, "Created", why it cannot be written) as a read of a hidden file.
			blind := policy.Decide(policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: abs},
				s.callState(c)).Verdict == policy.Deny
			// As for a read: outside the root no symlink is followed, nor resolved to decide where it leads.
			p, err := prepare(g)
			if err != nil && blind {
				return failed(fmt.Errorf("write %s: it cannot be replaced by a file, and a read rule hides why", abs)), nil
			}
			if err != nil {
				return failed(err), nil
			}
			shown := p
			if blind {
				shown = &fsops.Pending{Abs: p.Abs, New: p.New, Existed: true, Hidden: p.Hidden}
			}
			q := &execv1.Question{Title: verb + " " + abs, Preview: changePreview(abs, shown), Hidden: p.Hidden}
			q.Diff = changeDiff(abs, shown)
			if blind {
				q.Preview = fmt.Sprintf("A read rule hides %s: what it holds is not shown, and all of it is replaced.\n%s", abs, q.Preview)
			}
			ask := g.confirm
			if staged {
				ask = g.review
			}
			if res, err := ask(q); res != nil || err != nil {
				return res, err
			}
			if err := ctx.Err(); err != nil {
				return cancelled(), nil
			}
			newHash := sha256.Sum256(p.New)
			// The write is checked like a command's run: the file that completes a repository the file tools
			// assembled piece by piece (its config first, HEAD, objects/ and refs/ last) is undone as a command's.
			watch := s.guardWrite(c.sess, abs, inside, g.d.Verdict == policy.Ask, blind)
			err = c.sess.fs.Commit(g.p, p, func(abs string, old []byte, existed bool) error {
				_, err := s.undos.Snapshot(c.sess.id, abs, old, existed, newHash)
				return err
			})
			var undone []string
			if watch != nil {
				var gerr error
				if undone, gerr = s.guardAfter(c.sess.id, tool, abs, watch); gerr != nil {
					return nil, gerr
				}
			}
			if err != nil {
				return failed(err), nil
			}
			msg := fmt.Sprintf("Wrote %d bytes to %s.", len(p.New), abs)
			switch {
			case kind == policy.KindEdit:
				msg = fmt.Sprintf("Edited %s: %d replacement(s).", abs, p.Matches)
			case !shown.Existed:
				msg = fmt.Sprintf("Created %s (%d bytes).", abs, len(p.New))
			}
			res := &execv1.Result{Content: msg, Locations: locations(fsops.Location{Path: abs, Line: firstChangedLine(shown.Old, p.New)})}
			for _, l := range undone {
				res.Content += "\n" + l
				res.Notices = append(res.Notices, "Garuda: "+l)
			}
			return res, nil
		},
	}, nil
}

// allowRead is the filter of glob, grep and of the files a command set is loaded from: a file is opened only when
// reading it is simply allowed.
func (s *Service) allowRead(st *policy.State) func(string) bool {
	return func(abs string) bool {
		return policy.Decide(policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: abs}, st).Verdict == policy.Allow
	}
}

func checkGlob(s *Service, c *call) (*request, error) {
	g := c.start.GetGlob()
	if g.GetPattern() == "" {
		return nil, fmt.Errorf("the pattern is empty: %w", ErrBadRequest)
	}
	return checkSearch(s, c, g.GetPath(), g.GetPattern(), func(ctx context.Context, gr *grant,
		allow func(string) bool) (*fsops.ListResult, error) {
		return c.sess.fs.Glob(ctx, gr.p, g.GetPattern(), allow)
	})
}

func checkGrep(s *Service, c *call) (*request, error) {
	g := c.start.GetGrep()
	if g.GetPattern() == "" {
		return nil, fmt.Errorf("the pattern is empty: %w", ErrBadRequest)
	}
	req := fsops.GrepRequest{Pattern: g.GetPattern(), Glob: g.GetGlob(), CaseInsensitive: g.GetCaseInsensitive(),
		Context: int(g.GetContext()), OutputMode: g.GetOutputMode()}
	return checkSearch(s, c, g.GetPath(), g.GetPattern(), func(ctx context.Context, gr *grant,
		allow func(string) bool) (*fsops.ListResult, error) {
		return c.sess.fs.Grep(ctx, gr.p, req, allow)
	})
}

// checkSearch is the pipeline of glob and grep: the folder searched is decided, and every file in it again by the
// read policy before it is opened or listed.
func checkSearch(s *Service, c *call, path, pattern string, run func(context.Context, *grant,
	func(string) bool) (*fsops.ListResult, error)) (*request, error) {
	abs := c.sess.root
	if path != "" {
		abs, _ = c.sess.fs.Abs(path)
	}
	tool := policy.OpGlob
	if c.start.GetGrep() != nil {
		tool = policy.OpGrep
	}
	return &request{
		policy: policy.Request{Kind: policy.KindSearch, Tool: tool, Path: abs},
		input:  pattern,
		run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			if res, err := g.confirm(&execv1.Question{Title: "Search " + abs}); res != nil || err != nil {
				return res, err
			}
			r, err := run(ctx, g, s.allowRead(s.state(c.sess)))
			if err != nil {
				return failed(err), nil
			}
			return &execv1.Result{Content: joinLines(r.Text, r.Note), Locations: locations(r.Locations...)}, nil
		},
	}, nil
}
