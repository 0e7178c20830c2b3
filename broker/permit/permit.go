// Package permit is the proof that the policy has decided on an operation. The functions of the broker that open,
// read, match or change a path take a Permit, and only this package makes one: from a policy decision, and for a
// question, from the user's answer to it. So the order "decide, then touch" is kept by the types.
package permit

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/garuda-dev/garuda/policy"
)

// ErrNotPermitted is what an operation without the right permit fails with: a bug in the broker, never a user's
// mistake, so its message says what was missing.
var ErrNotPermitted = errors.New("not permitted by the policy")

type level uint8

const (
	levelNone    level = iota // decided, nothing permitted yet (an ask whose question has not been answered)
	levelPreview              // the target may be opened and read to build the question: reading it needs no question
	levelAct                  // the operation may be carried out
)

// Permit is what a decision allows for one request: nothing, a preview of its target, or the act itself. The zero
// Permit allows nothing.
type Permit struct {
	kind  policy.Kind
	path  string // the path decided (absolute and clean), empty for requests without one
	level level
	asked bool // the decision was an ask: Granted may turn it into an act
}

// Decide decides req under st, and returns the decision with the permit it gives:
//   - allow: the act;
//   - ask: a preview where policy.Previewable says the target may be read to build the question; otherwise
//     nothing until the user answers;
//   - deny: nothing.
func Decide(req policy.Request, st *policy.State) (policy.Decision, Permit) {
	d := policy.Decide(req, st)
	p := Permit{kind: req.Kind, path: req.Path}
	switch d.Verdict {
	case policy.Allow:
		p.level = levelAct
	case policy.Ask:
		p.asked = true
		if policy.Previewable(req, st) {
			p.level = levelPreview
		}
	default:
		return d, Permit{}
	}
	return d, p
}

// Granted is the permit of an ask after the user allowed its question: the act. A permit that was not an ask
// (a deny, or one already granted) is returned as it is.
func Granted(p Permit) Permit {
	if p.asked {
		p.level, p.asked = levelAct, false
	}
	return p
}

// Asking is the permit of an allow that a hook asked the user about: an ask again, whose target may be previewed
// only where policy.Previewable says so. Any other permit is returned as it is.
func Asking(p Permit, req policy.Request, st *policy.State) Permit {
	if p.level != levelAct {
		return p
	}
	p.asked, p.level = true, levelNone
	if policy.Previewable(req, st) {
		p.level = levelPreview
	}
	return p
}

// Path is the path the permit is for.
func (p Permit) Path() string { return p.path }

// Kind is the kind of request the permit is for.
func (p Permit) Kind() policy.Kind { return p.kind }

// Acts reports whether the operation may be carried out.
func (p Permit) Acts() bool { return p.level == levelAct }

// Previews reports whether the target may be opened and read (to build a question, or to act).
func (p Permit) Previews() bool { return p.level >= levelPreview }

// CheckAct returns nil when p lets an operation of one of kinds act on path.
func (p Permit) CheckAct(path string, kinds ...policy.Kind) error {
	return p.check(path, levelAct, kinds)
}

// CheckPreview returns nil when p lets an operation of one of kinds open and read path.
func (p Permit) CheckPreview(path string, kinds ...policy.Kind) error {
	return p.check(path, levelPreview, kinds)
}

func (p Permit) check(path string, want level, kinds []policy.Kind) error {
	ok := false
	for _, k := range kinds {
		ok = ok || k == p.kind
	}
	switch {
	case !ok:
		return fmt.Errorf("%s of %s: the permit is for a %s: %w", kinds, path, p.kind, ErrNotPermitted)
	case filepath.Clean(path) != p.path:
		return fmt.Errorf("%s: the permit is for %s: %w", path, p.path, ErrNotPermitted)
	case p.level < want:
		return fmt.Errorf("%s: %w yet", path, ErrNotPermitted)
	}
	return nil
}
