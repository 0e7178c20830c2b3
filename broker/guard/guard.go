package guard

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
)

// ErrTooLarge means the root holds more entries than the guard may walk: commands there are refused rather than
// left unchecked.
var ErrTooLarge = errors.New("too many files for the command guard")

// Options bound the guard's walk and say where else commands may write.
type Options struct {
	MaxEntries int      // the walk's limit (policy.GuardWalk)
	Skip       []string // root-relative folders the guard does not check (walked only when Deny is set)
	Hidden     []string // root-relative folders the sandbox hides whole: the walk enters none
	// Deny says whether the policy denies reading a root-relative path (a "**" read-deny rule): the walk asks it of
	// every entry it meets, lists the denied ones (Snapshot.Denied) and enters no denied folder. Walking for it
	// too, the guard's walk is the only one a command pays. nil: nothing is asked.
	Deny func(rel string) bool
	// DenyKey names what Deny answers by (the rules, the roots): when it changes, the next scan walks whole.
	DenyKey string
	// Writable are the folders outside the root that commands may write (the session's temp and cache folders):
	// a new symbolic link from the root into one of them is undone, since a repository planted there would be
	// run by git in the root's name.
	Writable []string
	// UserHome is the user's home folder: when the root is or holds it, its dot files and folders are protected
	// (policy.HomeProtected).
	UserHome string
	// Private are folders outside the root the guard never lists ($GARUDA_HOME, the team's audit folder): they hold
	// nothing of the user's configuration, and what they hold must not change what the guard does.
	Private []string
}

// Guard is one root's command guard. It is safe for concurrent use; several commands of a session may run at once.
type Guard struct {
	root string

	mu     sync.Mutex
	opts   Options
	t      *tree
	last   *Snapshot
	primed []string // what the root's own repository points git at, read before the first scan
	// made are the git folders below the root that commands of this guard created: their config stays writable
	// for later commands (git config user.name), since every change to it is neutralised after each command. The
	// user's own repositories, there before, keep theirs read-only: neutralising would remove their own settings.
	// The root's own .git/config is read-only whoever made it.
	made map[string]bool
	// linked is what the home's dot entries link to inside the root (homeLinked), read at the first scan.
	linked     []string
	linkedRead bool
	// enclosing is the work tree's top and git folder of the repository the root lies in (enclosingConfig), found
	// at the first scan.
	enclosing      [2]string
	enclosingFound bool
	// removed is when (gen, counted by each removal) the guard last removed each root-relative path as created by a
	// run: for a run under way then, whose scan before may hold what another run planted, it is absent before it.
	gen     int64
	removed map[string]int64
	// own are the .git files and links of the session's first scan (the user's worktrees and submodules), with
	// their fingerprints: only their repositories outside the root are read (outsidePointed).
	own map[string]string
	// userRel is what the user's global git config names by a relative path, read at each scan before the
	// repositories (readRepo takes it as each repository's own).
	userRel userRelative
}

// userRelative is what the user's global git config names by a relative path, which git takes, in each repository,
// relative to its work tree's top (where it runs hooks and programs): its core.hooksPath (`.githooks`, a team's
// versioned hooks in every repository), and the values of its program-running keys (a filter's `scripts/clean`).
type userRelative struct {
	hooksPath string
	programs  []string
}

// New makes the guard of root (absolute, clean).
func New(root string, o Options) *Guard {
	g := &Guard{root: filepath.Clean(root)}
	g.opts = o
	return g
}

// Prime reads what the root's own repository points git at, without walking the root, so that the file tools
// ask for those paths before the first scan (which the first command takes). A session's start does not walk the
// project: the walk would open every folder, those a rule hides included, before anything was asked.
func (g *Guard) Prime() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var facts []policy.GitRepo
	user := g.userConfig()
	if fi, err := os.Lstat(g.abs(".git")); err == nil && fi.IsDir() {
		facts = append(facts, g.readRepo(".git").facts)
	}
	facts = append(facts, user, g.enclosingConfig())
	if fi, err := os.Lstat(g.abs(".git")); err == nil && !fi.IsDir() {
		facts = append(facts, g.outsidePointed(map[string]string{".git": ""})...)
	}
	g.primed = policy.GitPointed(facts)
}

// Close releases the guard's watches.
func (g *Guard) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.t != nil {
		g.t.close()
		g.t = nil
	}
}

// Configure changes the walk's bounds (settings were read again); the next scan walks whole when they changed.
func (g *Guard) Configure(o Options) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.t != nil && (o.MaxEntries != g.opts.MaxEntries || o.DenyKey != g.opts.DenyKey || (o.Deny == nil) != (g.opts.Deny == nil) ||
		strings.Join(o.Skip, "\x00") != strings.Join(g.opts.Skip, "\x00") ||
		strings.Join(o.Hidden, "\x00") != strings.Join(g.opts.Hidden, "\x00")) {
		g.t.close()
		g.t = nil
	}
	if g.t != nil {
		g.t.deny = o.Deny // the same rules: what the tree holds stands, and folders read again ask the new one
	}
	if o.Writable == nil {
		// A file tool's write configures no sandbox: a background process's later checks still undo its links into
		// the session's temp and cache folders.
		o.Writable = g.opts.Writable
	}
	g.opts = o
}

// Unscanned reports whether no scan was taken yet (Pointed knows only the root's own repository).
func (g *Guard) Unscanned() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last == nil
}

// Pointed returns the root-relative paths the repositories pointed git at in the last scan (policy.GitPointed),
// and whether there was a scan; before the first, what Prime read of the root's own repository.
func (g *Guard) Pointed() ([]string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		return g.primed, false
	}
	return g.last.pointed, true
}

// Snapshot is what a scan found: the protected paths that exist, every git folder and pointer to one, and what
// the repositories point git at.
type Snapshot struct {
	root      string
	made      map[string]bool
	Entries   int
	protected map[string]string // root-relative → fingerprint
	repos     map[string]*repo  // git folder, root-relative
	pointers  map[string]string // ".git" files and links → fingerprint
	links     map[string]bool   // every symbolic link
	pointed   []string          // policy.GitPointed
	pointedFP map[string]string // each pointed path → fingerprint ("absent" included)
	ensure    []string          // hooks and info folders of git folders that lack them, absolute
	unlocked  []string          // folders the walk made listable by their owner to check them (tree.unlocked)
	// linkTo is where each protected or pointed path that is a symbolic link leads (its text): a read-only mount
	// covers the link's target, never the link, which a command can replace; the undo puts it back.
	linkTo map[string]string
	denied []string // what Options.Deny denied, root-relative, sorted
	// denyKey and hasDeny are the read rules the walk asked (Options): a folder denied after a run and not before
	// was made by the run only where they are the same.
	denyKey string
	hasDeny bool
}

type repo struct {
	fp     string            // config, config.worktree, commondir and the hooks folder's listing
	todoFP string            // the steps of a rebase under way (rebaseTodo): a change of them is none of the config
	common string            // the folder its commondir names, root-relative; "" when none or outside the root
	hooks  map[string]string // name → fingerprint, in the folder git runs hooks from
	execs  map[string]bool   // the exec lines of the rebase under way, as they were
	facts  policy.GitRepo
}

// Scan walks the root (only what changed since the last scan) and reads its repositories.
func (g *Guard) Scan() (*Snapshot, error) { return g.scan(true) }

// scan is Scan; unbounded, it walks past the limit: the scan after a run must see everything the run left, or a
// command could make the tree too large to check and so keep what it planted.
func (g *Guard) scan(bounded bool) (*Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.t == nil {
		max := g.opts.MaxEntries
		if max <= 0 {
			max = policy.DefaultGuardEntries
		}
		g.t = newTree(g.root, max, g.opts)
	}
	limit := g.t.max
	if !bounded {
		g.t.max = math.MaxInt
	}
	g.t.refresh()
	g.t.max = limit
	if g.t.over || bounded && g.t.count > limit {
		return nil, fmt.Errorf("%s holds more than %d files and folders: %w", g.root, limit, ErrTooLarge)
	}
	s := g.snapshot(g.t)
	g.last = s
	return s, nil
}

func (g *Guard) snapshot(t *tree) *Snapshot {
	s := &Snapshot{root: g.root, made: maps.Clone(g.made), Entries: t.count, protected: map[string]string{},
		repos: map[string]*repo{}, pointers: map[string]string{},
		links: map[string]bool{}, pointedFP: map[string]string{}, denyKey: g.opts.DenyKey, hasDeny: g.opts.Deny != nil}
	var prot []string
	var hiddenGit []policy.GitRepo
	user := g.userConfig() // before the repositories: what it names by a relative path is each one's (userRel)
	for rel, nd := range t.nodes {
		for _, name := range nd.denied {
			s.denied = append(s.denied, path.Join(rel, name))
			if name == ".git" && nd.dotGit == 'd' {
				// A .git folder a read rule hides ("Read(.git)"): the sandbox covers it whole, but what its config
				// points git at outside it (core.hooksPath's folder, programs) is still the guard's to protect.
				hiddenGit = append(hiddenGit, g.readRepo(path.Join(rel, ".git")).facts)
			}
		}
		for _, name := range nd.prot {
			prot = append(prot, path.Join(rel, name))
		}
		for _, name := range nd.links {
			s.links[path.Join(rel, name)] = true
		}
		if nd.dotGit == 'f' || nd.dotGit == 'l' {
			p := path.Join(rel, ".git")
			s.pointers[p] = fingerprint(g.abs(p))
		}
		if nd.gitDir {
			s.repos[rel] = g.readRepo(rel)
			for _, sub := range []string{"hooks", "info"} {
				if _, err := os.Lstat(g.abs(path.Join(rel, sub))); errors.Is(err, fs.ErrNotExist) {
					s.ensure = append(s.ensure, g.abs(path.Join(rel, sub)))
				}
			}
		}
	}
	// The folder a commondir names is a git folder too, whether the walk saw one there or not: git reads its config
	// and runs its hooks for the git folder that names it, and needs no HEAD in it.
	for _, r := range slices.Collect(maps.Values(s.repos)) {
		if r.common != "" && s.repos[r.common] == nil {
			s.repos[r.common] = g.readRepo(r.common)
		}
	}
	hidden := map[string]bool{}
	for _, d := range append(slices.Clone(s.denied), g.opts.Hidden...) {
		hidden[d] = true
	}
	// Only the topmost of nested protected paths: a folder is covered whole.
	sort.Strings(prot)
	for i, p := range prot {
		if i > 0 && under(p, prot[:i]) {
			continue
		}
		s.protected[p] = g.print(p, hidden)
		s.noteLink(p)
	}
	facts := make([]policy.GitRepo, 0, len(s.repos)+len(hiddenGit))
	for _, r := range s.repos {
		facts = append(facts, r.facts)
	}
	facts = append(facts, hiddenGit...)
	sort.Slice(facts, func(i, j int) bool { return facts[i].Dir < facts[j].Dir })
	if !g.linkedRead {
		g.linked, g.linkedRead = g.homeLinked(), true // once a session: the home lies outside the root, out of commands' reach
	}
	if g.own == nil && t == g.t {
		g.own = maps.Clone(s.pointers)
	}
	// Only the user's own pointers: one a run made names a folder of the run's choosing, a hidden one too, and is
	// removed when it leads outside. Defends against a planted .git file making the guard read a hidden repository.
	own := map[string]string{}
	for p, fp := range s.pointers {
		if g.own[p] == fp {
			own[p] = fp
		}
	}
	facts = append(append(facts, user, g.enclosingConfig()), g.outsidePointed(own)...)
	s.pointed = policy.GitPointed(facts)
	for _, l := range g.linked {
		if !slices.Contains(s.pointed, l) {
			s.pointed = append(s.pointed, l)
		}
	}
	sort.Strings(s.pointed)
	for _, p := range s.pointed {
		s.pointedFP[p] = g.print(p, hidden)
		s.noteLink(p)
	}
	sort.Strings(s.ensure)
	sort.Strings(s.denied)
	s.unlocked, t.unlocked = t.unlocked, nil
	return s
}

// walkWhole is a snapshot of the folder rel and all below it, walked once, whatever the read rules hide in it (only
// the secrets the sandbox hides are left out). For a folder a run made: everything in it is the run's own.
func (g *Guard) walkWhole(rel string) *Snapshot {
	t := newTree(g.root, math.MaxInt, Options{Skip: g.opts.Skip, Hidden: g.opts.Hidden, UserHome: g.opts.UserHome})
	defer t.close()
	t.n.close()
	t.n = noWatch{}
	mode := walkFull
	if slices.ContainsFunc(strings.Split(rel, "/"), func(n string) bool { return slices.Contains(skipNames, n) }) {
		mode = walkGitOnly // a hidden node_modules an install made: what git would find there, as anywhere
	}
	t.load(rel, inDotGit(parent(rel)) || path.Base(parent(rel)) == ".git", mode)
	return g.snapshot(t)
}

// print is the fingerprint of the root-relative p; of itself alone where it is or lies in a folder a read rule
// hides (denied): the sandbox covers such a folder whole, and listing it would make a scan's time depend on it.
func (g *Guard) print(p string, denied map[string]bool) string {
	in := false
	for q := p; q != "" && !in; q = parent(q) {
		in = denied[q]
	}
	if in {
		if key, _, ok := statKey(g.abs(p)); ok {
			return ":" + key + ";"
		}
		return "absent"
	}
	return fingerprint(g.abs(p))
}

// noteLink records where p leads when it is a symbolic link (Snapshot.linkTo).
func (s *Snapshot) noteLink(p string) {
	abs := s.root + "/" + p
	if fi, err := os.Lstat(abs); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return
	}
	if t, err := os.Readlink(abs); err == nil {
		if s.linkTo == nil {
			s.linkTo = map[string]string{}
		}
		s.linkTo[p] = t
	}
}

// under reports whether p is below one of the sorted paths in list.
func under(p string, list []string) bool {
	for _, q := range list {
		if rel, in := pathglob.Within(q, p); in && rel != "" {
			return true
		}
	}
	return false
}

// ReadOnly returns the absolute paths a command must see read-only: the protected paths and what the
// repositories point git at, where they exist.
func (s *Snapshot) ReadOnly() []string {
	var rels []string
	for p := range s.protected {
		if dir, name := parent(p), path.Base(p); s.made[dir] && (name == "config" || name == "config.worktree") {
			continue
		}
		rels = append(rels, p)
	}
	for p, fp := range s.pointedFP {
		if !isAbsent(fp) {
			rels = append(rels, p)
		}
	}
	sort.Strings(rels)
	rels = dedupTop(rels)
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = s.root + "/" + r
	}
	return out
}

// EnsureDirs returns the hooks and info folders of git folders that lack them, to be made (inside the git folder,
// never in the work tree) and covered.
func (s *Snapshot) EnsureDirs() []string { return s.ensure }

// Pointed returns what the repositories point git at (policy.GitPointed).
func (s *Snapshot) Pointed() []string { return s.pointed }

// Denied returns the root-relative paths Options.Deny denied, for the sandbox to hide; a denied folder is listed,
// not what is below it.
func (s *Snapshot) Denied() []string { return s.denied }

func dedupTop(sorted []string) []string {
	var out []string
	for i, p := range sorted {
		if i > 0 && (p == sorted[i-1] || under(p, out)) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func (g *Guard) abs(rel string) string {
	if rel == "" {
		return g.root
	}
	return g.root + "/" + rel
}

// absOf is dir made absolute: a root-relative folder, or one outside the root already absolute.
func (g *Guard) absOf(dir string) string {
	if filepath.IsAbs(dir) {
		return dir
	}
	return g.abs(dir)
}

// rel makes p (absolute or relative to dir, root-relative or absolute) root-relative; false when it is outside the root.
func (g *Guard) rel(dir, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(g.absOf(dir), p)
	}
	return pathglob.Within(g.root, filepath.Clean(p))
}

// maxConfig bounds what is read of a config file or an included one.
const maxConfig = 1 << 20

// readDir lists the folder rel below the root, opened through no symbolic link (openBeneath), sorted by name.
func (g *Guard) readDir(rel string) ([]fs.DirEntry, error) {
	f, err := openBeneath(-1, g.root, rel, os.O_RDONLY|oDirectory|oNoFollow|oNonblock)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// readFile reads a regular file below the root, following no symbolic link (openBeneath) and never blocking on a
// FIFO a command planted, at most maxConfig bytes.
func (g *Guard) readFile(rel string, limit int64) ([]byte, error) {
	f, err := openBeneath(-1, g.root, rel, os.O_RDONLY|oNoFollow|oNonblock)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// readRepo reads what a git folder's config points at, its installed hooks and its fingerprint.
func (g *Guard) readRepo(dir string) *repo {
	r := g.repoPrint(dir)
	r.facts.Dir = dir
	r.facts.Bare = path.Base(dir) != ".git"
	r.facts.Top = dir
	if !r.facts.Bare {
		r.facts.Top = parent(dir)
	}
	if data, err := g.readFile(path.Join(dir, "commondir"), 4096); err == nil {
		if c, ok := g.rel(dir, gitLine(string(data))); ok && c != dir {
			r.common = c
		}
	}
	// The config and the files it includes inside the root, in git's order: the last core.hooksPath wins.
	hooksPath, hooksFrom := "", dir
	seen := map[string]bool{}
	each := func(e entry) {
		switch section, _, _, key := e.parts(); {
		case section == "core" && key == "hookspath":
			hooksPath, hooksFrom = g.expandHome(e.value), r.facts.Top
		case section == "core" && key == "worktree" && r.facts.Bare && !e.noValue:
			if top, ok := g.rel(dir, e.value); ok {
				r.facts.Top = top
			}
		case runs(e) && section != "alias":
			// An alias runs only when the user calls it, as a Makefile target does: what it names is the project's.
			r.facts.Programs = append(r.facts.Programs, g.programPaths(e.value, r.facts.Top, cmp.Or(r.common, dir), dir, false)...)
		}
	}
	r.facts.Includes = append(g.readConfig(path.Join(dir, "config"), seen, 0, each),
		g.readConfig(path.Join(dir, "config.worktree"), seen, 0, each)...)
	// What the user's global config names by a relative path is this repository's: its hooks folder, unless its
	// own config names another, and its programs. Defends against a command that plants a hook in the .githooks
	// a global core.hooksPath names in every repository.
	if hooksPath == "" && g.userRel.hooksPath != "" {
		hooksPath, hooksFrom = g.userRel.hooksPath, r.facts.Top
	}
	for _, v := range g.userRel.programs {
		r.facts.Programs = append(r.facts.Programs, g.programPaths(v, r.facts.Top, cmp.Or(r.common, dir), dir, false)...)
	}
	if data, err := g.readFile(path.Join(dir, rebaseTodo), maxConfig); err == nil {
		r.execs = execLines(data)
	}
	hooksDir := path.Join(dir, "hooks")
	if hooksPath != "" && !strings.HasPrefix(hooksPath, "~") {
		if hp, ok := g.rel(hooksFrom, hooksPath); ok {
			r.facts.HooksPath = hp
			if hp == "" {
				r.facts.HooksPath = "."
			}
			hooksDir = hp
		} else {
			hooksDir = ""
		}
	}
	if hooksDir != "" {
		ents, _ := g.readDir(hooksDir)
		for _, e := range ents {
			name := e.Name()
			if strings.HasSuffix(name, ".sample") || e.IsDir() {
				continue
			}
			if p := path.Join(hooksDir, name); isExecutable(g.abs(p)) {
				head, _ := g.readFile(p, 4096)
				r.facts.Hooks = append(r.facts.Hooks, policy.Hook{Name: name, Head: head})
			}
		}
	}
	return r
}

// repoPrint is a git folder's fingerprint (its config, config.worktree and commondir, and each hook of its own
// hooks folder) and its rebase steps', without reading any of them.
func (g *Guard) repoPrint(dir string) *repo {
	r := &repo{hooks: map[string]string{}, todoFP: fingerprint(g.abs(path.Join(dir, rebaseTodo)))}
	var fp strings.Builder
	for _, name := range []string{"config", "config.worktree", "commondir"} {
		fp.WriteString(fingerprint(g.abs(path.Join(dir, name))) + ";")
	}
	ents, _ := g.readDir(path.Join(dir, "hooks"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sample") || e.IsDir() {
			continue
		}
		p := path.Join(dir, "hooks", e.Name())
		hfp := fingerprint(g.abs(p))
		r.hooks[p] = hfp
		fp.WriteString(p + "=" + hfp + ";")
	}
	r.fp = fp.String()
	return r
}

// gitShaped reports whether the folder rel is one git takes for a git folder (as the walk tells them: read).
func (g *Guard) gitShaped(rel string) bool {
	if fi, err := os.Lstat(g.abs(rel)); err != nil || !fi.IsDir() {
		return false
	}
	is := func(name string, dir bool) bool {
		fi, err := os.Lstat(g.abs(path.Join(rel, name)))
		return err == nil && (fi.IsDir() == dir || dir && fi.Mode()&fs.ModeSymlink != 0)
	}
	return path.Base(rel) == ".git" || is("HEAD", false) && (is("objects", true) && is("refs", true) || is("commondir", false))
}

// unwalked reports whether the walk leaves rel out because the read rules hide it or a folder it lies in.
func (g *Guard) unwalked(rel string) bool {
	for p := rel; p != ""; p = parent(p) {
		if slices.Contains(g.opts.Hidden, p) || g.opts.Deny != nil && g.opts.Deny(p) {
			return true
		}
	}
	return false
}

// hiddenRepos are the git folders among the folders of rel that the walk leaves out (unwalked), with their
// fingerprints; nil for one that is not a git folder.
func (g *Guard) hiddenRepos(rel string) map[string]*repo {
	out := map[string]*repo{}
	for a := parent(rel); a != "" && g.unwalked(a); a = parent(a) {
		out[a] = nil
		if g.gitShaped(a) {
			out[a] = g.repoPrint(a)
		}
	}
	return out
}

// readConfig reads a config file and, where they are included, the files it includes inside the root (git's
// order), calling each for every other entry; it returns the included files.
func (g *Guard) readConfig(rel string, seen map[string]bool, depth int, each func(entry)) (includes []string) {
	if depth > 10 || seen[rel] {
		return nil
	}
	seen[rel] = true
	data, err := g.readFile(rel, maxConfig)
	if err != nil {
		return nil
	}
	return g.eachEntry(data, seen, depth, each, func(v string) (string, bool) {
		if strings.HasPrefix(v, "~") {
			return "", false
		}
		return g.rel(parent(rel), v)
	})
}

// eachEntry calls each for every entry of a config but its includes, reads the files inside the root that it
// includes (in git's order; resolve names an include's root-relative path), and returns them.
func (g *Guard) eachEntry(data []byte, seen map[string]bool, depth int, each func(entry),
	resolve func(string) (string, bool)) (includes []string) {
	entries, err := parseConfig(data)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if section, _, _, key := e.parts(); (section == "include" || section == "includeif") && key == "path" {
			if inc, ok := resolve(g.expandHome(e.value)); ok && inc != "" {
				includes = append(includes, inc)
				includes = append(includes, g.readConfig(inc, seen, depth+1, each)...)
			}
			continue
		}
		each(e)
	}
	return includes
}

// expandHome reads a leading "~/" as git does: the user's home folder.
func (g *Guard) expandHome(v string) string {
	if strings.HasPrefix(v, "~/") && g.opts.UserHome != "" {
		return g.opts.UserHome + v[1:]
	}
	return v
}

// userConfig is what the global git configs (globalConfigs: ~/.gitconfig, ~/.config/git/config) point git at inside the
// root: the files they include, their core.hooksPath folder and the programs they name by an absolute path. git
// reads and runs these in every repository: defends against a command that rewrites ~/dotfiles/gitconfig (an
// include), ~/git-hooks/pre-commit or ~/tools/credential-helper, when the root is or holds the home folder (whose
// own dot files HomeProtected covers) or is a dotfiles repository the home links to or includes from. What they
// name by a relative path, which git takes in each repository, it leaves in g.userRel for readRepo.
func (g *Guard) userConfig() policy.GitRepo {
	var r policy.GitRepo
	home := g.opts.UserHome
	if home == "" {
		return r
	}
	if rel, in := policy.HomeIn(g.root, home); in {
		r.Dir, r.Top = path.Join(rel, ".gitconfig"), rel
	}
	seen := map[string]bool{}
	var rel userRelative
	defer func() { g.userRel = rel }()
	each := func(e entry) {
		switch section, _, _, key := e.parts(); {
		case section == "core" && key == "hookspath":
			rel.hooksPath = "" // the last one wins
			if v := g.expandHome(e.value); filepath.IsAbs(v) {
				if hp, ok := g.rel("", v); ok && hp != "" {
					r.HooksPath = hp
				}
			} else if !e.noValue && v != "" && !strings.HasPrefix(v, "~") {
				rel.hooksPath = v // relative to each repository's work tree (readRepo)
			}
		case section == "init" && key == "templatedir":
			// git init and git clone copy its hooks into every new repository
			if v := g.expandHome(e.value); filepath.IsAbs(v) {
				if t, ok := g.rel("", v); ok && t != "" {
					r.Programs = append(r.Programs, t)
				}
			}
		case runs(e) && section != "alias":
			// Absolute paths here; a relative one is relative to whichever repository git runs in (readRepo).
			r.Programs = append(r.Programs, g.programPaths(e.value, "", "", "", true)...)
			if section != "include" && section != "includeif" {
				rel.programs = append(rel.programs, e.value)
			}
		}
	}
	for _, f := range globalConfigs(home) {
		real, err := filepath.EvalSymlinks(f)
		if err != nil {
			continue
		}
		if rel, in := g.rel("", real); in && rel != "" {
			r.Includes = append(r.Includes, g.readConfig(rel, seen, 0, each)...)
			continue
		}
		r.Includes = append(r.Includes, g.readOutside(real, seen, each)...)
	}
	return r
}

// globalConfigs are the config files git reads before a repository's own, where git finds them, in its order (a
// later key wins): the system's ($GIT_CONFIG_SYSTEM, else /etc/gitconfig; none with GIT_CONFIG_NOSYSTEM), then the
// user's ($GIT_CONFIG_GLOBAL, else $XDG_CONFIG_HOME/git/config — ~/.config/git/config where it is unset — and
// ~/.gitconfig). The user's git runs in the environment the broker was started in. Defends against what a config
// git reads, found where the guard did not look, names in the project.
func globalConfigs(home string) []string {
	var out []string
	if nosys := os.Getenv("GIT_CONFIG_NOSYSTEM"); nosys == "" || nosys == "0" || strings.EqualFold(nosys, "false") {
		out = append(out, cmp.Or(os.Getenv("GIT_CONFIG_SYSTEM"), "/etc/gitconfig"))
	}
	if f := os.Getenv("GIT_CONFIG_GLOBAL"); f != "" {
		return append(out, f)
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = home + "/.config"
	}
	return append(out, xdg+"/git/config", home+"/.gitconfig")
}

// readOutside reads a config file outside the root (the user's own: links followed) and, where it includes them,
// the files inside the root it includes, calling each for every other entry; it returns those included files.
func (g *Guard) readOutside(abs string, seen map[string]bool, each func(entry)) (includes []string) {
	data, err := readBounded(abs)
	if err != nil {
		return nil
	}
	return g.eachEntry(data, seen, 0, each, func(v string) (string, bool) {
		if !filepath.IsAbs(v) {
			v = filepath.Join(filepath.Dir(abs), v)
		}
		return g.rel("", v)
	})
}

// enclosingConfig is what the repository the root lies in points git at inside the root, when the root is a folder
// of a larger repository (a package of a monorepo; outsideRepo). Defends against a command that plants a hook in
// packages/app/hooks, which the monorepo's config names, or rewrites a program it runs. Whether the root has a
// .git of its own does not matter: git in the monorepo's other folders still runs what its config names, and a
// command's `git init` in the root must not make the guard forget it.
func (g *Guard) enclosingConfig() policy.GitRepo {
	if g.root == "/" {
		return policy.GitRepo{}
	}
	if !g.enclosingFound {
		// Found once a session, as git's discovery does: upwards, not across a file system's boundary (where git
		// stops too, and where a lookup could wake an automounter).
		g.enclosingFound = true
		dev, ok := devOf(g.root)
		for top := filepath.Dir(g.root); ok; top = filepath.Dir(top) {
			if d, ok2 := devOf(top); !ok2 || d != dev {
				break
			}
			if gitDir, found := gitDirOf(top); found {
				if _, in := g.rel("", gitDir); !in {
					g.enclosing = [2]string{top, gitDir}
				}
				break
			}
			if top == "/" {
				break
			}
		}
	}
	if g.enclosing[0] == "" {
		return policy.GitRepo{}
	}
	return g.outsideRepo(g.enclosing[0], g.enclosing[1])
}

// outsidePointed is what the repositories whose git folder lies outside the root point git at inside it, for every
// .git file or link of the root (its own or a nested one's) that names such a folder: a worktree of a repository
// kept elsewhere (git worktree add), a submodule whose repository is the superproject's. Defends against a command
// that plants a hook in the .githooks a worktree's repository names, relative to the work tree.
func (g *Guard) outsidePointed(pointers map[string]string) []policy.GitRepo {
	var out []policy.GitRepo
	for p := range pointers {
		top := g.abs(parent(p))
		if gitDir, ok := gitDirOf(top); ok {
			if _, in := g.rel("", gitDir); !in {
				out = append(out, g.outsideRepo(top, gitDir))
			}
		}
	}
	return out
}

// outsideRepo reads the repository whose work tree's top is top and whose git folder, gitDir, lies outside the
// root, for what it points git at inside the root: its core.hooksPath folder, the files its config includes, the
// programs it names and, where top lies in the root, the files of the hook manager whose hook it has installed.
func (g *Guard) outsideRepo(top, gitDir string) policy.GitRepo {
	var r policy.GitRepo
	common := gitDir
	if data, err := readBounded(filepath.Join(gitDir, "commondir")); err == nil {
		if common = gitLine(string(data)); !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	hooksPath, seen := "", map[string]bool{}
	each := func(e entry) {
		switch section, _, _, key := e.parts(); {
		case section == "core" && key == "hookspath":
			hooksPath = g.expandHome(e.value)
		case runs(e) && section != "alias":
			r.Programs = append(r.Programs, g.programPaths(e.value, top, common, gitDir, false)...)
		}
	}
	r.Includes = append(g.readOutside(filepath.Join(common, "config"), seen, each),
		g.readOutside(filepath.Join(gitDir, "config.worktree"), seen, each)...)
	hooksDir := filepath.Join(common, "hooks")
	if hooksPath != "" {
		hooksDir = filepath.Join(top, hooksPath)
		if filepath.IsAbs(hooksPath) {
			hooksDir = hooksPath
		}
	}
	if hp, ok := g.rel(top, hooksPath); hooksPath != "" && ok {
		r.HooksPath = cmp.Or(hp, ".") // the root itself: its hooks by name
	}
	if t, in := g.rel("", top); in {
		r.Top, r.Hooks = cmp.Or(t, "."), installedHooks(hooksDir)
	}
	return r
}

// installedHooks are the executable hooks of a hooks folder outside the root, with their first 4 KiB.
func installedHooks(dir string) []policy.Hook {
	ents, _ := os.ReadDir(dir)
	var out []policy.Hook
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".sample") || e.IsDir() || !isExecutable(p) {
			continue
		}
		head, _ := readBounded(p)
		out = append(out, policy.Hook{Name: e.Name(), Head: head[:min(len(head), 4096)]})
	}
	return out
}

// gitDirOf returns the git folder of the work tree top, as git's discovery finds it: its .git folder, or the
// folder its .git file names.
func gitDirOf(top string) (string, bool) {
	p := filepath.Join(top, ".git")
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "", false
	case fi.IsDir():
		real, err := filepath.EvalSymlinks(p) // a .git link names its folder by its real name
		return real, err == nil
	}
	data, err := readBounded(p)
	if err != nil {
		return "", false
	}
	d, ok := strings.CutPrefix(gitLine(string(data)), "gitdir: ")
	if !ok {
		return "", false
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(top, d)
	}
	if real, err := filepath.EvalSymlinks(d); err == nil {
		d = real
	}
	return d, true
}

// readBounded reads at most maxConfig bytes of a regular file outside the root (the user's own: links followed),
// never blocking on a FIFO.
func readBounded(abs string) ([]byte, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", abs)
	}
	return io.ReadAll(io.LimitReader(f, maxConfig))
}

// homeLinked returns the root-relative paths that the links among the home folder's dot entries lead to inside the
// root, when the home lies outside it: a dotfiles repository whose files GNU stow, chezmoi's symlink mode or a
// hand-made link make the user's live configuration (~/.bashrc -> dotfiles/bashrc, ~/.config/nvim -> dotfiles/nvim,
// ~/bin/x). Defends against a command that rewrites the shell's, git's or an editor's configuration through its
// target in the project. It looks three levels into the home's dot folders and ~/bin, at most 5,000 entries.
func (g *Guard) homeLinked() []string {
	home := g.opts.UserHome
	if _, in := policy.HomeIn(g.root, home); home == "" || in {
		return nil
	}
	var out []string
	n := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if n++; n > 5000 {
				return
			}
			name := e.Name()
			if depth == 0 && !strings.HasPrefix(name, ".") && name != "bin" || name == ".cache" {
				continue
			}
			p := filepath.Join(dir, name)
			switch {
			case slices.Contains(g.opts.Private, p):
				// Garuda's own folders, in the home by default (~/.garuda): defends against their listing's time
				// (the sessions, the undo snapshots) showing in the first command's.
			case e.Type()&fs.ModeSymlink != 0:
				if t, err := filepath.EvalSymlinks(p); err == nil {
					if rel, in := g.rel("", t); in && rel != "" {
						out = append(out, rel)
					}
				}
			case e.IsDir() && depth < 2:
				walk(p, depth+1)
			}
		}
	}
	walk(home, 0)
	return out
}

// programPaths returns the root-relative paths that a config value naming a program (runKeys) names inside the
// root: its words that look like paths, relative to the work tree's top, where git runs such programs (absOnly:
// absolute ones alone), with transcrypt's "$(git rev-parse --git-common-dir)" (and --git-dir) read as git would. Defends against a command
// that rewrites a program the user's own config runs on git status or diff (.git/crypt/clean, tools/fsmonitor.sh).
func (g *Guard) programPaths(value, top, commonDir, gitDir string, absOnly bool) []string {
	value = strings.TrimPrefix(strings.TrimSpace(value), "!")
	if gitDir != "" {
		value = strings.NewReplacer("$(git rev-parse --git-common-dir)", g.absOf(commonDir),
			"$(git rev-parse --git-dir)", g.absOf(gitDir)).Replace(value)
	}
	var out []string
	for _, w := range shellWords(value) {
		if opt, val, ok := strings.Cut(w, "="); ok && strings.HasPrefix(opt, "-") {
			w = val // --file=PATH
		}
		w = g.expandHome(w)
		if !strings.Contains(w, "/") || strings.Contains(w, "://") || strings.ContainsAny(w, "$`") || absOnly && !filepath.IsAbs(w) {
			continue
		}
		// A folder is an argument (a path to work on), not a program: left out, so that it stays the project's.
		if p, ok := g.rel(top, w); ok && p != "" && !isDir(g.abs(p)) {
			out = append(out, p)
		}
	}
	return out
}

// shellWords splits s into words as sh would, without expanding anything: quotes join, unquoted blanks and the
// operators ; | & ( ) < > split, a backslash escapes the next byte.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'':
			w.WriteByte(c)
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case quote == '"':
			w.WriteByte(c)
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case strings.IndexByte(" \t\n;|&()<>", c) >= 0:
			end()
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	end()
	return words
}

func isDir(abs string) bool {
	fi, err := os.Stat(abs)
	return err == nil && fi.IsDir()
}

func isExecutable(abs string) bool {
	fi, err := os.Stat(abs)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// fingerprint says what is at abs without reading contents: absent, or the inode, size, change time and mode of
// it and, for a folder, of everything below it. The change time cannot be set back by a command (utimes sets only
// the other two; the clock is out of its reach), so a write that restores the modification time is still seen.
func fingerprint(abs string) string {
	var b strings.Builder
	n := 0
	var walk func(p, name string)
	walk = func(p, name string) {
		key, dir, ok := statKey(p)
		if !ok {
			if name == "" {
				b.WriteString("absent")
			}
			return
		}
		fmt.Fprintf(&b, "%s:%s;", name, key)
		if !dir || n > 1000 {
			return
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for _, e := range ents {
			n++
			walk(p+"/"+e.Name(), name+"/"+e.Name())
		}
	}
	walk(abs, "")
	return b.String()
}

// isAbsent is fingerprint's answer for nothing there.
func isAbsent(fp string) bool { return fp == "absent" }
