package broker

import (
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

// guardBegin takes the guard's scan before a sandboxed run. Past the walk's limit the run is refused: a tree the
// guard cannot check is not left unchecked.
func (s *Service) guardBegin(sess *session, st *policy.State, spec sandbox.Spec) (*guard.Watch, error) {
	maxEntries, skip := policy.GuardWalk(st)
	// What the sandbox hides (read-denied folders) a command can neither see nor write: the walk leaves it out.
	for _, h := range spec.Hidden {
		if rel, in := pathglob.Within(sess.fs.Real(), filepath.Clean(h)); in && rel != "" {
			skip = append(skip, rel)
		}
	}
	sess.guard.Configure(guard.Options{MaxEntries: maxEntries, Skip: skip, Writable: spec.Writable})
	w, err := sess.guard.Begin()
	if errors.Is(err, guard.ErrTooLarge) {
		return nil, fmt.Errorf("%w; commands are refused where Garuda cannot check what they leave behind. Raise the limit "+
			`with "guard": {"max_entries": %d} in %s, or leave folders of data out with "guard": {"skip": ["path/in/project"]}`,
			err, 2*maxEntries, filepath.Join(s.cfg.Home, "settings.json"))
	}
	return w, err
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
	if len(rep.Undone) > 0 {
		lines = append(lines, "Undone after the command, because git, a hook manager or an editor would run it later outside "+
			"the sandbox: "+strings.Join(rep.Undone, "; ")+". Ask the user to make such changes themselves if they are wanted.")
	}
	if len(rep.Changed) > 0 {
		lines = append(lines, "Warning: the command changed protected paths: "+strings.Join(rep.Changed, ", "))
	}
	if len(rep.Errors) > 0 {
		lines = append(lines, "Warning: Garuda could not undo everything the command left behind: "+strings.Join(rep.Errors, "; "))
	}
	for _, n := range rep.Notes {
		lines = append(lines, "Note: "+n+".")
	}
	return lines, s.record(audit.Record{Session: sessID, Event: audit.EventGuardUndone, Op: op, Input: command,
		Detail: map[string]string{"undone": strings.Join(rep.Undone, "\n"), "changed": strings.Join(rep.Changed, " "),
			"errors": strings.Join(rep.Errors, "\n")}}, true)
}
