package guard

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
)

// node is what the walk keeps of one folder: only what the guard needs, not every name.
type node struct {
	wd      int32    // its watch, or -1
	inGit   bool     // it is a git folder or below one
	subdirs []subdir // the subfolders walked
	denied  []string // entries tree.deny names: hidden from commands, never entered
	mode    walkMode // what the walk looks for in it
	prot    []string // entries policy.Protected names
	links   []string // symbolic links
	gitDir  bool     // a git folder: named .git, or HEAD beside objects and refs (or commondir)
	dotGit  byte     // its ".git" entry: 0 none, 'd' folder, 'f' file, 'l' symlink
	count   int      // entries
}

// subdir is a subfolder to walk, and what for.
type subdir struct {
	name string
	mode walkMode
}

// walkMode is what the walk looks for in a folder.
type walkMode uint8

const (
	walkFull walkMode = iota // everything the guard checks
	// walkDenyOnly: a folder the guard itself does not enter (a skipped or protected one, git's data), walked only
	// to find what the read-deny rules name in it; nothing else of it is kept.
	walkDenyOnly
	// walkGitOnly: node_modules, at any depth, walked only for what git would find there (a .git entry, a folder
	// shaped like a git folder, links) and for the read-deny rules: git status in a package's folder, a shell
	// prompt's or an editor's that opened a file there, runs the config of a repository planted in it. Its other
	// files are the project's code (policy.GuardSkipAlways).
	walkGitOnly
)

// tree is the root's folders as last walked. With a notifier, a refresh re-reads only the folders whose entries
// changed since; without one (or after its queue overflowed), it walks everything again.
type tree struct {
	root string
	max  int
	skip map[string]bool // root-relative folders the guard does not enter (walked for deny alone)
	// hidden are root-relative folders the sandbox hides whole: nothing below them is walked.
	hidden map[string]bool
	// deny says whether reading a root-relative path is denied (Options.Deny); nil: nothing is asked.
	deny func(rel string) bool
	// home is the user's home folder, root-relative, when the root is or holds it (inHome): its dot entries are
	// protected (policy.HomeProtected).
	home   string
	inHome bool
	nodes  map[string]*node
	byWD   map[int32]string
	n      notifier
	count  int
	over   bool // the last walk stopped at max
	fresh  bool // nodes hold a walk (else the next refresh walks whole)
	// unlocked are the folders the walk made listable by their owner (ownerAccess) since the last snapshot.
	unlocked []string
	rootFD   int // the root, every folder is opened beneath (openBeneath); -1 when it could not be opened
}

// skipNames are never entered, at any depth (policy.GuardSkipAlways says why), and gitInternal inside a git
// folder (objects, refs and logs are data git reads, never runs; they are most of a repository's files).
var (
	skipNames   = policy.GuardSkipAlways
	gitInternal = []string{"objects", "refs", "logs", "lfs"}
)

func newTree(root string, max int, o Options) *tree {
	t := &tree{root: root, max: max, skip: map[string]bool{}, hidden: map[string]bool{}, deny: o.Deny,
		nodes: map[string]*node{}, byWD: map[int32]string{}}
	t.home, t.inHome = policy.HomeIn(root, o.UserHome)
	for _, s := range o.Skip {
		t.skip[s] = true
	}
	for _, h := range o.Hidden {
		t.hidden[h] = true
	}
	t.n = newNotifier()
	t.rootFD = openRoot(root)
	return t
}

// close releases the tree's watches and its handle on the root.
func (t *tree) close() {
	t.n.close()
	if t.rootFD >= 0 {
		syscall.Close(t.rootFD)
		t.rootFD = -1
	}
}

func (t *tree) abs(rel string) string {
	if rel == "" {
		return t.root
	}
	return t.root + "/" + rel
}

// refresh brings the tree up to date with the disk.
func (t *tree) refresh() {
	dirty, gone, ok := t.n.changed()
	if !ok || !t.fresh || t.over {
		t.rewalk()
		return
	}
	// A folder removed, replaced or moved away: forget it, and re-read its parent, which finds what is there now.
	for wd := range gone {
		if rel, ok := t.byWD[wd]; ok {
			t.drop(rel)
			if rel == "" {
				t.rewalk()
				return
			}
			if pnd, ok := t.nodes[parent(rel)]; ok && pnd.wd >= 0 {
				dirty[pnd.wd] = true
			}
		}
	}
	rels := make([]string, 0, len(dirty))
	for wd := range dirty {
		if rel, ok := t.byWD[wd]; ok {
			rels = append(rels, rel)
		}
	}
	sort.Slice(rels, func(i, j int) bool { return strings.Count(rels[i], "/") < strings.Count(rels[j], "/") })
	for _, rel := range rels {
		if old, ok := t.nodes[rel]; ok {
			t.reload(rel, old)
		}
		if t.over {
			t.rewalk()
			return
		}
	}
}

func (t *tree) rewalk() {
	t.n.reset()
	t.nodes, t.byWD, t.count, t.over = map[string]*node{}, map[int32]string{}, 0, false
	t.load("", false, walkFull)
	t.fresh = true
}

// reload re-reads one folder whose entries changed, walks its new subfolders and forgets the gone ones.
func (t *tree) reload(rel string, old *node) {
	nd, ok := t.read(rel, old.inGit, old.mode, old.wd)
	if !ok {
		t.drop(rel)
		return
	}
	t.count += nd.count - old.count
	t.nodes[rel] = nd
	t.watchFiles(rel, nd)
	for _, s := range old.subdirs {
		if !slices.Contains(nd.subdirs, s) {
			t.drop(path.Join(rel, s.name))
		}
	}
	for _, s := range nd.subdirs {
		if _, known := t.nodes[path.Join(rel, s.name)]; !known {
			t.load(path.Join(rel, s.name), nd.inGit || nd.gitDir || s.name == ".git", s.mode)
		}
	}
}

// watchFiles watches the files of a git folder that is not named .git (HEAD beside objects and refs) as well as
// its entries, once the read found it is one: folders in a git folder are watched so from the start (load).
func (t *tree) watchFiles(rel string, nd *node) {
	if nd.gitDir && !nd.inGit && nd.wd >= 0 {
		t.n.watch(t.abs(rel), true)
	}
}

// inDotGit reports whether rel is a folder named .git or lies below one. Only there is git's data left out of the
// walk: a folder that merely looks like a bare repository may hold a repository the user enters below its refs/
// (defends against hiding one there).
func inDotGit(rel string) bool {
	return slices.Contains(strings.Split(rel, "/"), ".git")
}

func parent(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// drop forgets a folder and everything below it.
func (t *tree) drop(rel string) {
	for r, nd := range t.nodes {
		if _, in := pathglob.Within(rel, r); in || rel == "" {
			t.count -= nd.count
			if nd.wd >= 0 {
				t.n.unwatch(nd.wd)
				delete(t.byWD, nd.wd)
			}
			delete(t.nodes, r)
		}
	}
}

// load walks the folder rel and everything below it, up to max entries in all.
func (t *tree) load(rel string, inGit bool, mode walkMode) {
	if t.count > t.max {
		t.over = true
		return
	}
	wd := t.n.watch(t.abs(rel), inGit) // before reading: a change made while it is read is not missed
	if wd >= 0 {
		if other, taken := t.byWD[wd]; taken && other != rel {
			t.n.poison() // the same folder under two names (a bind mount): walk whole from now on
		}
		t.byWD[wd] = rel
	}
	nd, ok := t.read(rel, inGit, mode, wd)
	if !ok {
		return
	}
	t.watchFiles(rel, nd)
	t.nodes[rel] = nd
	t.count += nd.count
	if t.count > t.max {
		t.over = true
		return
	}
	for _, s := range nd.subdirs {
		t.load(path.Join(rel, s.name), nd.inGit || nd.gitDir || s.name == ".git", s.mode)
	}
}

// read lists one folder without following a symbolic link to it. With a deny function, it asks it of every entry:
// a denied entry is listed for the sandbox to hide and, a folder, not entered (hidden whole, as read_file's rules
// deny everything below it); the folders the guard itself does not enter are walked for that alone (walkDenyOnly),
// and node_modules for that and what git would find there (walkGitOnly).
func (t *tree) read(rel string, inGit bool, mode walkMode, wd int32) (*node, bool) {
	f, err := openBeneath(t.rootFD, t.root, rel, os.O_RDONLY|oDirectory|oNoFollow|oNonblock)
	if errors.Is(err, fs.ErrPermission) && rel != "" {
		// A folder its owner cannot list, or whose parent it cannot search: made listable, and said so.
		for _, p := range []string{parent(rel), rel} {
			if ownerAccess(t.root, p) {
				t.unlocked = append(t.unlocked, p)
			}
		}
		f, err = openBeneath(t.rootFD, t.root, rel, os.O_RDONLY|oDirectory|oNoFollow|oNonblock)
	}
	if err != nil {
		return nil, false
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	nd := &node{wd: wd, inGit: inGit, mode: mode, count: len(ents)}
	denied := func(name string) bool {
		if t.deny != nil && t.deny(path.Join(rel, name)) {
			nd.denied = append(nd.denied, name)
			return true
		}
		return false
	}
	if mode == walkDenyOnly {
		for _, e := range ents {
			if !denied(e.Name()) && e.IsDir() && t.deny != nil && !t.hidden[path.Join(rel, e.Name())] {
				nd.subdirs = append(nd.subdirs, subdir{e.Name(), walkDenyOnly})
			}
		}
		return nd, true
	}
	nd.gitDir = path.Base(rel) == ".git"
	var head, objects, refs, commondir bool
	var dirs []subdir
	for _, e := range ents {
		name, typ := e.Name(), e.Type()
		switch {
		case name == ".git":
			switch {
			case typ.IsDir():
				nd.dotGit = 'd'
			case typ&fs.ModeSymlink != 0:
				nd.dotGit = 'l'
			default:
				nd.dotGit = 'f'
			}
		case name == "HEAD" && !typ.IsDir():
			head = true
		// git's is_git_directory follows links (access(X_OK) on objects and refs, a read of commondir): a link
		// counts like what it may name, or a planted repository of links would pass for a plain folder.
		case name == "objects" && (typ.IsDir() || typ&fs.ModeSymlink != 0):
			objects = true
		case name == "refs" && (typ.IsDir() || typ&fs.ModeSymlink != 0):
			refs = true
		case name == "commondir" && !typ.IsDir():
			commondir = true
		}
		if typ&fs.ModeSymlink != 0 {
			nd.links = append(nd.links, name)
		}
		// Outside a git folder, only a name policy.MayBeProtected lets through can be protected.
		protected := false
		// A .git folder stays writable (git writes objects and its index there); what is protected inside it is
		// found by walking on. A .git file (a worktree's or submodule's pointer) is protected itself.
		isGitFolder := typ.IsDir() && strings.EqualFold(name, ".git")
		// In the home folder itself every entry is asked (HomeProtected names ~/bin, which no quick test lets through).
		if mode == walkFull && !isGitFolder && (inGit || nd.gitDir || policy.MayBeProtected(name) || t.inHome && rel == t.home) {
			p := path.Join(rel, name)
			if protected = policy.Protected(p) || t.inHome && policy.HomeProtected(p, t.home); protected {
				nd.prot = append(nd.prot, name)
			}
		}
		if !denied(name) && typ.IsDir() {
			m := walkFull // a .git folder in node_modules is walked whole, as anywhere
			switch {
			case protected:
				m = walkDenyOnly // covered whole
			case mode == walkGitOnly && name != ".git":
				m = walkGitOnly
			}
			dirs = append(dirs, subdir{name, m})
		}
	}
	nd.gitDir = nd.gitDir || head && (objects && refs || commondir)
	for _, d := range dirs {
		p := path.Join(rel, d.name)
		switch {
		case t.hidden[p]:
		case d.mode == walkDenyOnly || t.skip[p] || nd.gitDir && inDotGit(rel) && slices.Contains(gitInternal, d.name):
			// What the guard leaves out may still hold what a read-deny rule names: walked for that alone.
			if t.deny != nil {
				nd.subdirs = append(nd.subdirs, subdir{d.name, walkDenyOnly})
			}
		case d.mode == walkFull && slices.Contains(skipNames, d.name):
			nd.subdirs = append(nd.subdirs, subdir{d.name, walkGitOnly})
		default:
			nd.subdirs = append(nd.subdirs, d)
		}
	}
	if mode == walkGitOnly && t.deny == nil {
		// Only its folders count toward the walk's limit: the guard keeps nothing else of node_modules, and a
		// project's dependencies often hold more files than the project itself.
		nd.count = len(nd.subdirs)
	}
	return nd, true
}
