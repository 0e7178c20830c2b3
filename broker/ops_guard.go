// The command guard around a sandboxed run: the scan before (what is protected is made read-only), the run, and the
// scan after, which undoes what the command left for programs that run later outside the sandbox.

package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
)

// guardBegin takes the guard's scan before a sandboxed run: the one walk of the project before it, which also finds
// what "**" read-deny rules name there (readDenied). Past the walk's limit the run is refused: a tree the guard
// cannot check, or search for secrets, is not left unchecked.
func (s *Service) guardBegin(sess *session, st *policy.State, spec sandbox.Spec) (*guard.Watch, error) {
	maxEntries, _ := policy.GuardWalk(st)
	o := s.guardOptions(sess, st, spec.Hidden)
	o.Writable = spec.Writable
	deny := o.Deny
	sess.guard.Configure(o)
	w, err := sess.guard.Begin()
	if errors.Is(err, guard.ErrTooLarge) {
		err = fmt.Errorf("%w; commands are refused where Garuda cannot check what they leave behind. Raise the limit "+
			`with "guard": {"max_entries": %d} in %s, or leave folders of data out with "guard": {"skip": ["path/in/project"]}`,
			err, 2*maxEntries, filepath.Join(s.cfg.Home, "settings.json"))
		if deny != nil {
			err = fmt.Errorf("%w (a \"**\" read-deny rule is searched for in skipped folders too, so only the limit helps there)", err)
		}
		return nil, err
	}
	if err == nil {
		s.keepPending(sess.fs.Real(), w) // until w.End: a broker that dies during the run leaves it for the next
	}
	return w, err
}

// guardOptions are the guard's walk options in a session's state: its bounds, and what the read policy hides, which
// the walk never enters: hidden, the paths the sandbox hides (under the root by either of its names), and the "**"
// read-deny rules (readDenied). Defends against the walk, and so what it finds (where a repository points git), the
// questions that follow from it and its time, depending on a folder a rule hides.
func (s *Service) guardOptions(sess *session, st *policy.State, hidden []string) guard.Options {
	maxEntries, skip := policy.GuardWalk(st)
	var rels []string
	for _, h := range hidden {
		for _, root := range []string{sess.fs.Real(), sess.root} {
			if rel, in := pathglob.Within(root, filepath.Clean(h)); in && rel != "" {
				rels = append(rels, rel)
				break
			}
		}
	}
	deny, denyKey := readDenied(st)
	private := []string{s.cfg.Home}
	if st.Team != nil && st.Team.AuditDir != "" {
		private = append(private, filepath.Clean(st.Team.AuditDir))
	}
	return guard.Options{MaxEntries: maxEntries, Skip: skip, Hidden: rels, Deny: deny, DenyKey: denyKey, UserHome: s.userHome,
		Private: private}
}

// guardAfter takes the guard's scan after a command (bash, a hook, or a background process) ended, undoes what it
// left for programs that run later outside the sandbox, audits it and returns the lines that say so (for the model
// and the user).
func (s *Service) guardAfter(sessID, op, command string, w *guard.Watch) ([]string, error) {
	rep, err := w.Check()
	if err != nil {
		// The tree grew past the limit during the run: say so; the next command is refused until it is bounded.
		rep = &guard.Report{Errors: []string{err.Error()}}
	}
	if rep.Empty() {
		return nil, nil
	}
	var lines []string
	what, undone := "the command", "Undone after the command"
	switch op {
	case policy.OpWriteFile, policy.OpEditFile:
		what, undone = "the write", "Undone after the write"
	case guardRecoverOp:
		undone = "Undone what a command left when an earlier Garuda ended during it (killed, or crashed)"
	}
	if len(rep.Undone) > 0 {
		lines = append(lines, undone+", because git, a hook manager or an editor would run it later outside "+
			"the sandbox: "+strings.Join(rep.Undone, "; ")+". Ask the user to make such changes themselves if they are wanted.")
	}
	if len(rep.Changed) > 0 {
		lines = append(lines, "Warning: "+what+" changed protected paths: "+strings.Join(rep.Changed, ", "))
	}
	if len(rep.Errors) > 0 {
		lines = append(lines, "Warning: Garuda could not undo everything "+what+" left behind: "+strings.Join(rep.Errors, "; "))
	}
	for _, n := range rep.Notes {
		lines = append(lines, "Note: "+n+".")
	}
	return lines, s.record(audit.Record{Session: sessID, Event: audit.EventGuardUndone, Op: op, Input: command,
		Detail: map[string]string{"undone": strings.Join(rep.Undone, "\n"), "changed": strings.Join(rep.Changed, " "),
			"errors": strings.Join(rep.Errors, "\n"), "hidden": strings.Join(rep.Quiet, "\n")}}, true)
}

// runFailure is a sandboxed run that could not start or could not be checked: the call fails with its reason.
type runFailure struct{ err error }

func (f *runFailure) Error() string { return f.err.Error() }

func (f *runFailure) Unwrap() error { return f.err }

// runGuarded runs spec in the sandbox under the command guard, the one way the broker runs a command to its end (a
// bash call, a hook): the guard's scan before (what is protected is made read-only for the command), the run, and
// the scan after, which undoes what the command left for programs that run later outside the sandbox. It returns
// the guard's lines about what it undid; op names the run in the guard's audit record (bash, hook). A *runFailure
// error means nothing ran, or its result cannot be trusted; any other error (the audit log) ends the call.
func (s *Service) runGuarded(ctx context.Context, c *call, st *policy.State, op string,
	spec sandbox.Spec) (*sandbox.Result, []string, error) {
	watch, err := s.guardBefore(c.sess, st, &spec)
	if err != nil {
		return nil, nil, &runFailure{err}
	}
	defer watch.End()
	res, err := sandbox.Run(ctx, spec)
	if err != nil {
		return nil, nil, &runFailure{runError(err)}
	}
	if watch == nil {
		return res, nil, nil
	}
	undone, err := s.guardAfter(c.sess.id, op, spec.Command, watch)
	return res, undone, err
}

// guardBefore takes the guard's scan before a sandboxed command (what is protected now is made read-only for it, and
// what to compare with after); nil for a command outside the sandbox. A background process takes it too, and the
// scan after when it ends.
func (s *Service) guardBefore(sess *session, st *policy.State, spec *sandbox.Spec) (*guard.Watch, error) {
	var watch *guard.Watch
	if !spec.Unsandboxed {
		var err error
		if watch, err = s.guardBegin(sess, st, *spec); err != nil {
			return nil, err
		}
		spec.ReadOnly, spec.EnsureDirs = watch.Before().ReadOnly(), watch.Before().EnsureDirs()
		// What "**" read-deny rules name in the project, found by the same walk, is hidden with the other secrets.
		for _, rel := range watch.Before().Denied() {
			spec.Hidden = append(spec.Hidden, filepath.Join(sess.fs.Real(), rel)) // the walk's root, as ReadOnly's
		}
		// Hooks and info folders that do not exist yet in git folders are made first, so that they can be covered.
		cover, err := sandbox.EnsureProtectedDirs(sess.fs.Real(), spec.EnsureDirs)
		if err != nil {
			watch.End()
			return nil, fmt.Errorf("prepare the protected folders: %w", err)
		}
		spec.ReadOnly = append(spec.ReadOnly, cover...) // where one cannot be made, its parent is read-only
	}
	// A second name for a protected file would carry writes past its read-only mount: refuse to run.
	if linked := hardLinked(spec.ReadOnly); len(linked) > 0 {
		watch.End()
		return nil, fmt.Errorf("protected files have another hard link, through which a command could change them: %s; "+
			"remove the other links and try again", strings.Join(linked, ", "))
	}
	return watch, nil
}

// guardWrite takes the guard's scan before a file tool writes inside the root, with the session's bounds and read
// rules; nil outside the root or where the root is too large to walk (each write is still decided by
// its path). A write the user was asked about is the user's: its own path is left as written. Defends against a
// repository assembled by write_file alone, whose last file no rule can tell apart.
func (s *Service) guardWrite(sess *session, abs string, inside, asked, blind bool) *guard.Watch {
	rel, in := pathglob.Within(sess.root, abs)
	if !inside || !in || sess.guard == nil {
		return nil
	}
	// The walk leaves out what the read policy hides, as before a command: defends against a write before the
	// session's first command walking into hidden folders (its time, and what it says it made listable).
	st := s.state(sess)
	sess.guard.Configure(s.guardOptions(sess, st, s.secrets(st)))
	w, err := sess.guard.Begin()
	if err != nil {
		return nil
	}
	if asked {
		w.Exempt(filepath.ToSlash(rel)) // what the user was asked about (a protected path always is) stays as written
	}
	if blind {
		w.Blind(filepath.ToSlash(rel)) // the walk enters no hidden folder: the write's own folders are checked
	}
	return w
}

// runError is a failure of sandbox.Run, in words.
func runError(err error) error {
	if errors.Is(err, sandbox.ErrUnavailable) {
		return fmt.Errorf("%w; run `garuda-exec doctor` to see what this machine lacks", err)
	}
	return fmt.Errorf("run the command: %w", err)
}
