package guard

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
)

// Report is what the guard found and undid after a command.
type Report struct {
	Undone  []string // one line each: what was undone and where (root-relative)
	Changed []string // protected paths that existed and changed (the read-only mounts should make this empty)
	Errors  []string // what could not be undone
	Notes   []string // what the next run will meet (the tree past the walk's limit)
	// Quiet is what was undone, or could not be, in folders a read rule hides that the run did not make: for the
	// audit log, never for the model, to which it would say what such a folder holds.
	Quiet []string
}

// Empty reports whether there is nothing to say.
func (r *Report) Empty() bool {
	return len(r.Undone) == 0 && len(r.Changed) == 0 && len(r.Errors) == 0 && len(r.Notes) == 0 && len(r.Quiet) == 0
}

// Watch is one run of something sandboxed under the guard: the scan before it, to which every later check
// compares. A long-running process (a background command, an MCP server, a hook) calls Check every few seconds
// and when it ends; a command calls it once, at its end.
type Watch struct {
	g      *Guard
	before *Snapshot
	exempt string // a root-relative path the run was allowed to write as it is (Exempt)
	blind  string // a root-relative path a read rule hides that the run writes (Blind)
	hidden map[string]*repo
	gen    int64     // Guard.gen when the scan before was taken
	kept   io.Closer // the run's pending file (Keep), closed by End
}

// Blind says the run is a file tool's write of rel, which a read rule hides: the git folders among its folders that
// the walk leaves out (hidden) are fingerprinted now and checked by Check, as the walk checks the others. Defends
// against a repository the file tools assemble in a hidden folder, which the walk never sees; what is undone there
// is Quiet (the model learns nothing of what the folder held).
func (w *Watch) Blind(rel string) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	w.blind, w.hidden = rel, w.g.hiddenRepos(rel)
}

// Exempt names the one root-relative path the run itself was allowed to write (a file tool's write the user was
// asked about): Check leaves it, and the protected folder made to hold it, as written.
func (w *Watch) Exempt(rel string) { w.exempt = rel }

// Begin scans the root before a run.
func (g *Guard) Begin() (*Watch, error) {
	s, err := g.Scan()
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return &Watch{g: g, before: s, gen: g.gen}, nil
}

// Changed returns a channel closed when the entries of a folder the guard watches change next (a file or folder
// made, removed or renamed; it may be closed already), or when its watches are dropped: a long-running run's next
// Check need not wait for its interval. nil when no watch can tell (the root is walked whole at every scan).
func (w *Watch) Changed() <-chan struct{} {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	if w.g.t == nil {
		return nil
	}
	return w.g.t.n.changes()
}

// Before is the scan the watch compares to.
func (w *Watch) Before() *Snapshot { return w.before }

// Check scans the root again and undoes what the run left for programs that run later outside the sandbox: in
// every git folder that is new or whose config or hooks changed, the config keys that run programs or send data
// elsewhere, and new executable hooks; pointers (.git files) to outside the root; protected files and folders that
// did not exist; new links into the writable places outside the root.
func (w *Watch) Check() (*Report, error) {
	after, err := w.g.scan(false)
	if err != nil {
		return nil, err
	}
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	rep := w.g.undo(w.g.forget(w.before, w.gen), after, w.exempt)
	w.g.undoHidden(w, after, rep)
	if w.g.t != nil && after.Entries > w.g.t.max {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the project now holds %d files and folders, more than the %d the guard "+
			"checks before a command: the next command will be refused", after.Entries, w.g.t.max))
	}
	return rep, nil
}

func (g *Guard) undo(before, after *Snapshot, exempt string) *Report {
	rep := &Report{}
	r, err := os.OpenRoot(g.root)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("open the root: %v", err))
		return rep
	}
	defer r.Close()
	u := &undoer{g: g, r: r, rep: rep, exempt: exempt}
	for _, p := range append(before.unlocked, after.unlocked...) { // the scan before may have met one the user made
		u.did("made %s listable by its owner, to check what is in it", cmp.Or(p, "the project folder"))
	}
	before.unlocked, after.unlocked = nil, nil // said once, not at every check of a long-running process

	// Git folders that are new, or whose config, commondir or hooks changed; and those whose rebase steps alone
	// changed (a command that goes on with a rebase of the user's repository changes nothing of its config).
	var dirs, todos []string
	for dir, ar := range after.repos {
		br, ok := before.repos[dir]
		if !ok && dir != ".git" {
			if g.made == nil {
				g.made = map[string]bool{}
			}
			g.made[dir] = true
		}
		switch {
		case !ok || br.fp != ar.fp:
			dirs = append(dirs, dir)
		case br.todoFP != ar.todoFP:
			todos = append(todos, dir)
		}
	}
	// A new or changed .git file or link: one to outside the root is removed; one to a folder inside is neutralised
	// like any git folder, found by the walk or not (a skipped folder).
	for p, fp := range after.pointers {
		if before.pointers[p] == fp {
			continue
		}
		target, ok := u.pointerTarget(p)
		switch {
		case !ok:
			u.remove(p, "a .git pointer to a folder outside the project")
		case after.repos[target] == nil:
			dirs = append(dirs, target)
		}
	}
	// A protected link replaced: the read-only mount covered its target, not the link itself. Put back, before the
	// git folders are read again (.git/hooks may be such a link).
	for _, p := range slices.Sorted(maps.Keys(before.linkTo)) {
		if t, err := u.r.Readlink(p); (err != nil || t != before.linkTo[p]) && !u.isExempt(p) {
			u.relink(p, before.linkTo[p])
		}
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		u.repo(dir, before.repos[dir])
	}
	sort.Strings(todos)
	for _, dir := range todos {
		u.todo(dir, before.repos[dir])
	}
	// Protected files and folders the run created, outside git folders (which are neutralised, not removed).
	// Only inside a .git folder is a protected path git's own (its config, hooks, info): a folder that merely looks
	// like a bare repository (HEAD, objects, refs) shelters no editor file or .envrc a command creates in it, and a
	// .git folder no git front end's configuration (lazygit's lazygit.yml), which git never writes.
	inRepo := func(p string) bool {
		if policy.GitFrontEndConfig(p) {
			return false
		}
		for dir := range after.repos {
			if _, in := pathglob.Within(dir, p); in && inDotGit(dir) {
				return true
			}
		}
		_, isPointer := after.pointers[p]
		return isPointer
	}
	created := map[string]bool{}
	existing := keys(before.protected)
	for p, fp := range after.protected {
		bfp, existed := before.protected[p]
		switch {
		case (!existed || isAbsent(bfp)) && !isAbsent(fp) && !inRepo(p) && !under(p, existing):
			created[p] = true
		// The folder that holds the path the user allowed changed by that write: no warning.
		case existed && bfp != fp && !inRepo(p) && !u.holdsExempt(p) && before.linkTo[p] == "" && // a link is put back
			!(g.t.hidden[p] && !isAbsent(bfp)):
			// A folder the sandbox hid whole (it existed: covered by an empty mount) no command could change: what
			// changed there is the broker's own doing ($GARUDA_HOME in a project that holds the home: its audit log).
			rep.Changed = append(rep.Changed, p)
		}
	}
	// What the repositories point git at and did not exist: removed inside a git folder too (a file an existing
	// config includes, say), except the hooks and info folders the broker itself made before the run to cover them.
	ensured := map[string]bool{}
	for _, e := range before.ensure {
		ensured[e] = true
	}
	for p, fp := range before.pointedFP {
		if isAbsent(fp) && !ensured[g.abs(p)] && !isAbsent(fingerprint(g.abs(p))) {
			created[p] = true
		}
	}
	for _, p := range sortedKeys(created) {
		if _, holds := pathglob.Within(p, exempt); exempt == "" || !holds {
			u.remove(p, "created by the command")
		}
	}
	// New links into the writable places outside the root.
	for p := range after.links {
		if before.links[p] {
			continue
		}
		if t, err := filepath.EvalSymlinks(g.abs(p)); err == nil && g.outsideWritable(t) {
			u.remove(p, "a link to "+t+", which commands may write")
		}
	}
	sort.Strings(rep.Changed)
	return rep
}

// undoHidden undoes what the run left where the walk does not look because a read rule hides it. A hidden folder
// that was not there to be hidden when the run began (the sandbox covered nothing there) is the run's own: it is
// walked whole and undone like the rest, and said (defends against a repository a command plants in a hidden folder
// it made). In a hidden folder that was there, only a file tool's blind write can have written (Blind): the git
// folders among the written path's folders are checked, quietly.
func (g *Guard) undoHidden(w *Watch, after *Snapshot, rep *Report) {
	var made []string
	if w.before.hasDeny && after.hasDeny && w.before.denyKey == after.denyKey {
		for _, rel := range after.denied {
			if _, was := slices.BinarySearch(w.before.denied, rel); was { // sorted (snapshot)
				continue
			}
			if fi, err := os.Lstat(g.abs(rel)); err == nil && fi.IsDir() {
				made = append(made, rel)
			}
		}
	}
	if len(made) == 0 && w.blind == "" {
		return
	}
	empty := &Snapshot{protected: map[string]string{}, repos: map[string]*repo{}, pointers: map[string]string{},
		links: map[string]bool{}, pointedFP: map[string]string{}}
	for _, rel := range made {
		sub := g.undo(empty, g.walkWhole(rel), w.exempt)
		rep.Undone, rep.Errors = append(rep.Undone, sub.Undone...), append(rep.Errors, sub.Errors...)
	}
	if w.blind == "" {
		return
	}
	r, err := os.OpenRoot(g.root)
	if err != nil {
		rep.Quiet = append(rep.Quiet, fmt.Sprintf("open the root: %v", err))
		return
	}
	defer r.Close()
	quiet := &Report{}
	u := &undoer{g: g, r: r, rep: quiet, exempt: w.exempt}
	now := g.hiddenRepos(w.blind)
	for _, dir := range sortedKeys(mapKeys(now)) {
		switch before := w.hidden[dir]; {
		case now[dir] == nil:
		case before == nil || before.fp != now[dir].fp:
			u.repo(dir, before)
		case before.todoFP != now[dir].todoFP:
			u.todo(dir, before)
		}
	}
	rep.Quiet = append(append(rep.Quiet, quiet.Undone...), quiet.Errors...)
}

// forget is before without the paths the guard removed since gen (as created by another run), and what is below
// them: absent before, what is there now was created. Defends against a run that puts back, as its own, a link
// another run under way planted (a background process's), which then stays for good.
func (g *Guard) forget(before *Snapshot, gen int64) *Snapshot {
	var gone []string
	for p, at := range g.removed {
		if at > gen {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		return before
	}
	b := *before
	b.protected, b.pointedFP, b.linkTo = maps.Clone(b.protected), maps.Clone(b.pointedFP), maps.Clone(b.linkTo)
	for _, m := range []map[string]string{b.protected, b.pointedFP, b.linkTo} {
		for p := range m {
			if slices.ContainsFunc(gone, func(q string) bool { _, in := pathglob.Within(q, p); return in }) {
				delete(m, p)
			}
		}
	}
	return &b
}

func mapKeys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (g *Guard) outsideWritable(abs string) bool {
	for _, w := range g.opts.Writable {
		if _, in := pathglob.Within(w, abs); in {
			return true
		}
	}
	return false
}

// undoer carries out the undoing through the root's handle, which never leaves the root: defends against a
// command still running swapping a folder for a link to outside between the scan and the undo.
type undoer struct {
	g      *Guard
	r      *os.Root
	rep    *Report
	exempt string // Watch.Exempt
}

// isExempt reports whether rel is the path the run was allowed to write as it is.
func (u *undoer) isExempt(rel string) bool { return u.exempt != "" && rel == u.exempt }

// holdsExempt reports whether rel is that path or a folder it lies in.
func (u *undoer) holdsExempt(rel string) bool {
	_, in := pathglob.Within(rel, u.exempt)
	return u.exempt != "" && in
}

func (u *undoer) did(format string, a ...any) {
	u.rep.Undone = append(u.rep.Undone, fmt.Sprintf(format, a...))
}
func (u *undoer) failed(format string, a ...any) {
	u.rep.Errors = append(u.rep.Errors, fmt.Sprintf(format, a...))
}

func (u *undoer) remove(rel, why string) {
	if u.isExempt(rel) {
		return
	}
	err := u.r.RemoveAll(rel)
	if errors.Is(err, fs.ErrPermission) {
		// Folders their owner cannot list (chmod 311; the user's editor still reads a file in them by its name).
		n := 0
		u.g.ownerAccessBelow(rel, &n)
		err = u.r.RemoveAll(rel)
	}
	if err != nil {
		u.failed("could not remove %s (%s): %v", rel, why, err)
		return
	}
	if u.g.removed == nil {
		u.g.removed = map[string]int64{}
	}
	u.g.gen++
	u.g.removed[rel] = u.g.gen
	u.did("removed %s (%s)", rel, why)
}

// ownerAccessBelow gives rel and every folder below it read and search permission for their owner (ownerAccess),
// at most 10,000 folders, so that they can be removed.
func (g *Guard) ownerAccessBelow(rel string, n *int) {
	if *n++; *n > 10000 {
		return
	}
	ownerAccess(g.root, rel)
	ents, _ := g.readDir(rel)
	for _, e := range ents {
		if e.IsDir() {
			g.ownerAccessBelow(path.Join(rel, e.Name()), n)
		}
	}
}

// relink puts back the link p, leading to target, in place of what a command left there.
func (u *undoer) relink(p, target string) {
	if err := u.r.RemoveAll(p); err != nil {
		u.failed("could not put back the link %s: %v", p, err)
		return
	}
	if err := u.r.Symlink(target, p); err != nil {
		u.failed("could not put back the link %s: %v", p, err)
		return
	}
	u.did("put back the link %s -> %s, which the command had replaced", p, target)
}

// pointerTarget reads a .git file ("gitdir: PATH") or link and returns its folder, root-relative; false when it
// points outside the root or cannot be read.
func (u *undoer) pointerTarget(p string) (string, bool) {
	fi, err := u.r.Lstat(p)
	if err != nil {
		return "", errors.Is(err, fs.ErrNotExist) // gone: nothing to undo
	}
	var target string
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = u.r.Readlink(p); err != nil {
			return "", false
		}
	} else {
		data, err := u.g.readFile(p, 4096)
		if err != nil {
			return "", false
		}
		s, ok := strings.CutPrefix(string(data), "gitdir: ")
		if !ok {
			return "", false
		}
		target = gitLine(s)
	}
	rel, ok := u.g.rel(parent(p), target)
	if !ok {
		return "", false
	}
	// The target's own links must stay inside too.
	real, err := filepath.EvalSymlinks(u.g.abs(rel))
	if err == nil {
		if rel, ok = u.g.rel("", real); !ok {
			return "", false
		}
	}
	return rel, true
}

// gitLine is a path as git reads it from a .git file (after "gitdir: ") or a commondir: only the line ends at its
// end are cut, never spaces, which are part of the name (setup.c). Defends against a target that the guard would
// read as another folder than git does ("../common " is not "../common").
func gitLine(s string) string {
	return strings.TrimRight(s, "\r\n")
}

// repo neutralises one git folder: its config's dangerous keys, its commondir to outside, new executable hooks.
func (u *undoer) repo(dir string, before *repo) {
	hooks := u.g.readRepoHooks(dir)
	for _, name := range []string{"config", "config.worktree"} {
		u.config(path.Join(dir, name))
	}
	switch data, err := u.g.readFile(path.Join(dir, "commondir"), 4096); {
	case err == nil:
		if _, ok := u.g.rel(dir, gitLine(string(data))); !ok {
			u.remove(path.Join(dir, "commondir"), "it pointed git at a folder outside the project")
		}
	case !errors.Is(err, fs.ErrNotExist):
		// A link or other non-regular commondir: git follows it to a folder the guard did not read.
		u.remove(path.Join(dir, "commondir"), "a commondir that is not a plain file")
	}
	u.todo(dir, before)
	// Hooks in the git folder's own hooks folder, which git uses once core.hooksPath is gone.
	for _, p := range hooks {
		if before != nil {
			if fp, ok := before.hooks[p]; ok && fp == fingerprint(u.g.abs(p)) {
				continue // there before, unchanged
			}
		}
		u.hook(p)
	}
}

// readRepoHooks lists the hooks of a git folder's own hooks folder (samples aside).
func (g *Guard) readRepoHooks(dir string) []string {
	r := g.readRepo(dir)
	var out []string
	for p := range r.hooks {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// hook makes one hook unable to run: a link or other non-regular file is removed, a regular file loses its
// execute bits (git skips a hook that is not executable, and says so).
func (u *undoer) hook(rel string) {
	if u.isExempt(rel) {
		return
	}
	fi, err := u.r.Lstat(rel)
	if err != nil {
		return
	}
	if !fi.Mode().IsRegular() {
		u.remove(rel, "a hook that is not a plain file")
		return
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return
	}
	f, err := u.r.OpenFile(rel, os.O_RDONLY|oNoFollow|oNonblock, 0)
	if errors.Is(err, fs.ErrPermission) {
		// A program its owner may run but not read (mode 111): its mode is changed by name, inside the root.
		if err = u.r.Chmod(rel, fi.Mode().Perm()&^0o111); err == nil {
			u.did("made the hook %s non-executable", rel)
			return
		}
	}
	if err != nil {
		u.failed("could not disable the hook %s: %v", rel, err)
		return
	}
	defer f.Close()
	if err := f.Chmod(fi.Mode().Perm() &^ 0o111); err != nil {
		u.failed("could not disable the hook %s: %v", rel, err)
		return
	}
	u.did("made the hook %s non-executable", rel)
}

// rebaseTodo is where git keeps the steps left of a rebase under way (interactive, or with --exec): `git rebase
// --continue` or `--skip`, which git status and editors offer, runs each exec line with the shell.
const rebaseTodo = "rebase-merge/git-rebase-todo"

// todo comments out the exec lines of a git folder's rebase steps that were not there before the run (a rebase the
// user began keeps its own), and removes steps git could read but the guard cannot (a link, of the file or of its
// folder, or a file over 1 MiB). Defends against a command that leaves a rebase under way whose next step runs its
// program when the user continues it, outside the sandbox.
func (u *undoer) todo(dir string, before *repo) {
	rel := path.Join(dir, rebaseTodo)
	if u.isExempt(rel) {
		return
	}
	data, err := u.g.readFile(rel, maxConfig+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil || len(data) > maxConfig:
		what := rel
		if fi, lerr := u.r.Lstat(path.Dir(rel)); lerr == nil && !fi.IsDir() {
			what = path.Dir(rel) // git follows a link in the folder's place too
		}
		u.remove(what, "the steps of a rebase that are not a plain file git's exec lines could be checked in")
		return
	}
	var keep map[string]bool
	if before != nil {
		keep = before.execs
	}
	out, n := disableExecs(data, keep)
	if n == 0 {
		return
	}
	if err := u.rewrite(rel, out); err != nil {
		u.failed("could not rewrite %s: %v", rel, err)
		return
	}
	u.did("commented out %d exec step(s) in %s, which git rebase --continue would run", n, rel)
}

// execLines are the exec steps of a rebase's steps, as written.
func execLines(data []byte) map[string]bool {
	lines := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		if isExecStep(line) {
			lines[strings.TrimRight(line, "\r\n")] = true
		}
	}
	return lines
}

// isExecStep reports whether a line of a rebase's steps is an exec step as git's sequencer parses it: blanks, then
// "exec" or "x", then a blank or the line's end.
func isExecStep(line string) bool {
	s := strings.TrimLeft(line, " \t")
	for _, word := range []string{"exec", "x"} {
		if rest, ok := strings.CutPrefix(s, word); ok && (rest == "" || strings.ContainsRune(" \t\r\n", rune(rest[0]))) {
			return true
		}
	}
	return false
}

// disableExecs comments out the exec steps of data not in keep, and says how many. A "#" line is a comment to git
// (with another core.commentChar, an invalid step, at which the rebase stops before running anything).
func disableExecs(data []byte, keep map[string]bool) ([]byte, int) {
	var b strings.Builder
	n := 0
	for line := range strings.Lines(string(data)) {
		if isExecStep(line) && !keep[strings.TrimRight(line, "\r\n")] {
			b.WriteString("# ")
			n++
		}
		b.WriteString(line)
	}
	return []byte(b.String()), n
}

// rewrite replaces the file rel with out: written beside it, then renamed over it (no link followed).
func (u *undoer) rewrite(rel string, out []byte) error {
	tmp := rel + ".garuda-tmp"
	f, err := u.r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	if errors.Is(err, fs.ErrExist) {
		u.r.Remove(tmp)
		f, err = u.r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	}
	if err != nil {
		return err
	}
	_, werr := f.Write(out)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = u.r.Rename(tmp, rel)
	}
	if werr != nil {
		u.r.Remove(tmp)
	}
	return werr
}

// config removes the keys that run programs from one config file, writing the rest back in its place.
func (u *undoer) config(rel string) {
	if u.isExempt(rel) {
		return
	}
	data, err := u.g.readFile(rel, maxConfig+1)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var out []byte
	var removed []string
	switch {
	case err != nil:
		// Not a regular file (a FIFO, a link, a folder): git could still read it. Replace it.
		if rerr := u.r.RemoveAll(rel); rerr != nil {
			u.failed("could not remove %s: %v", rel, rerr)
			return
		}
		out, removed = []byte(safeConfig), []string{"the whole file (" + err.Error() + ")"}
	case len(data) > maxConfig:
		out, removed = []byte(safeConfig), []string{"the whole file (over 1 MiB)"}
	default:
		out, removed = neutralizeConfig(data)
	}
	if len(removed) == 0 {
		return
	}
	if err := u.rewrite(rel, out); err != nil {
		u.failed("could not rewrite %s: %v", rel, err)
		return
	}
	u.did("removed %s from %s", strings.Join(removed, ", "), rel)
}
