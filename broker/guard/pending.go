package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// MaxPending bounds a pending run's file (Pending, Resume): a larger one is refused whole.
const MaxPending = 32 << 20

// ErrBadPending is Resume's answer for a file that is not a pending run of this root.
var ErrBadPending = errors.New("not a pending run of the command guard")

// pending is a Snapshot as a pending run's file keeps it: only what Check compares with, every path root-relative
// (the folders it ensured too). Writable, the sandbox's folders outside the root, is only compared with, never
// opened.
type pending struct {
	Version   int
	Root      string
	Protected map[string]string
	Repos     map[string]pendingRepo
	Pointers  map[string]string
	Links     []string
	PointedFP map[string]string
	Ensure    []string
	LinkTo    map[string]string
	Denied    []string
	DenyKey   string
	HasDeny   bool
	Writable  []string
}

type pendingRepo struct {
	FP, TodoFP string
	Hooks      map[string]string
	Execs      []string
}

const pendingVersion = 1

// Pending encodes the watch's scan before, for a file that outlives the broker while the run is under way: if the
// broker dies during the run (SIGKILL, the OOM killer), a later broker resumes the watch from it (Resume) and
// undoes what the run left, which it would otherwise take for the user's own.
func (w *Watch) Pending() ([]byte, error) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	b := w.before
	p := pending{Version: pendingVersion, Root: w.g.root, Protected: b.protected, Pointers: b.pointers,
		PointedFP: b.pointedFP, LinkTo: b.linkTo, Denied: b.denied, DenyKey: b.denyKey, HasDeny: b.hasDeny,
		Repos: make(map[string]pendingRepo, len(b.repos)), Links: sortedKeys(b.links), Writable: w.g.opts.Writable}
	for dir, r := range b.repos {
		p.Repos[dir] = pendingRepo{FP: r.fp, TodoFP: r.todoFP, Hooks: r.hooks, Execs: sortedKeys(r.execs)}
	}
	for _, e := range b.ensure {
		if rel, ok := w.g.rel("", e); ok {
			p.Ensure = append(p.Ensure, rel)
		}
	}
	data, err := json.Marshal(p)
	if err == nil && len(data) > MaxPending {
		err = fmt.Errorf("the scan before the run takes %d bytes, more than %d", len(data), MaxPending)
	}
	return data, err
}

// Resume makes the watch a dead broker's run had from its pending file (Pending): its Check undoes what the run
// left since. The file is data, never trusted to name anything outside the root: it is decoded strictly, bounded,
// and refused whole unless it names this root and every path in it is root-relative and clean.
func (g *Guard) Resume(data []byte) (*Watch, error) {
	if len(data) > MaxPending {
		return nil, fmt.Errorf("%w: over %d bytes", ErrBadPending, MaxPending)
	}
	var p pending
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPending, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the end", ErrBadPending)
	}
	if p.Version != pendingVersion || p.Root != g.root {
		return nil, fmt.Errorf("%w: version %d of root %q", ErrBadPending, p.Version, p.Root)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPending, err)
	}
	s := &Snapshot{root: g.root, protected: nonNil(p.Protected), repos: map[string]*repo{}, pointers: nonNil(p.Pointers),
		links: map[string]bool{}, pointedFP: nonNil(p.PointedFP), linkTo: nonNil(p.LinkTo), denied: p.Denied,
		denyKey: p.DenyKey, hasDeny: p.HasDeny}
	slices.Sort(s.denied)
	for _, l := range p.Links {
		s.links[l] = true
	}
	for _, e := range p.Ensure {
		s.ensure = append(s.ensure, g.abs(e))
	}
	for dir, r := range p.Repos {
		rp := &repo{fp: r.FP, todoFP: r.TodoFP, hooks: nonNil(r.Hooks), execs: map[string]bool{}}
		for _, e := range r.Execs {
			rp.execs[e] = true
		}
		s.repos[dir] = rp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opts.Writable == nil {
		g.opts.Writable = p.Writable // the dead run's temp and cache folders: links into them are undone
	}
	return &Watch{g: g, before: s, gen: g.gen}, nil
}

// Keep ties c (the run's pending file) to the watch: End closes it.
func (w *Watch) Keep(c io.Closer) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	w.kept = c
}

// End says the run is over and checked: what Keep tied to the watch is closed. nil-safe, and safe to call twice.
func (w *Watch) End() {
	if w == nil {
		return
	}
	w.g.mu.Lock()
	c := w.kept
	w.kept = nil
	w.g.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// check refuses a pending file with a path that is not root-relative and clean, or with a Writable that is not
// absolute and clean.
func (p *pending) check() error {
	var paths []string
	for _, m := range []map[string]string{p.Protected, p.Pointers, p.PointedFP, p.LinkTo} {
		for k := range m {
			paths = append(paths, k)
		}
	}
	for dir, r := range p.Repos {
		paths = append(paths, dir)
		for k := range r.Hooks {
			paths = append(paths, k)
		}
	}
	paths = append(append(append(paths, p.Links...), p.Ensure...), p.Denied...)
	for _, rel := range paths {
		if !rootRelative(rel) {
			return fmt.Errorf("the path %q is not inside the root", rel)
		}
	}
	for _, w := range p.Writable {
		if !filepath.IsAbs(w) || filepath.Clean(w) != w {
			return fmt.Errorf("the folder %q is not an absolute path", w)
		}
	}
	return nil
}

// rootRelative reports whether rel is a clean root-relative path as the walk names them ("" is the root).
func rootRelative(rel string) bool {
	return rel == "" || (path.Clean(rel) == rel && !path.IsAbs(rel) && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") &&
		!strings.ContainsRune(rel, 0))
}

func nonNil[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}
