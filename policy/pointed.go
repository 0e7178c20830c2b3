package policy

import (
	"bytes"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// GitRepo is what the broker read of one repository below the root, for GitPointed. Paths are root-relative and
// slash-separated; "" is the root itself.
type GitRepo struct {
	Dir       string   // its git folder: ".git", "sub/.git", "tools/x.git" (bare), ".git/modules/m"
	Bare      bool     // Dir is not a folder named .git (a bare repository, a submodule's or a planted one)
	Top       string   // the folder its hooks run in: the work tree's top, or Dir for a bare repository
	HooksPath string   // the folder core.hooksPath names, when inside the root ("." for the root); "" when unset or outside
	Includes  []string // the files its config includes (include.path, includeIf.*.path) that lie inside the root
	Programs  []string // the programs and files its config's program-running keys name inside the root
	Hooks     []Hook   // the executable hooks in the folder git runs its hooks from
}

// Hook is one installed hook: its name and its first bytes (up to 4 KiB), by which a hook manager is recognised.
type Hook struct {
	Name string
	Head []byte
}

// hookNames are the hooks git runs (githooks(5), git 2.39). A hook folder that is the work tree's top itself
// (core.hooksPath = .) is protected by these names only, not whole.
var hookNames = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
	"commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
	"proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
	"post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
	"p4-post-changelist", "p4-pre-submit", "post-index-change",
}

// hookManagers are the hook managers recognised by what their installed hook says, and the files (relative to the
// work tree's top) whose content the hook runs. package.json (husky 4, yorkie, ghooks, simple-git-hooks) is not
// among them: package managers rewrite it on every install, and a hook manager there only re-installs hooks.
var hookManagers = []struct {
	mark  string // the hook's text mentions it (case-insensitive)
	files []string
}{
	{"husky", []string{".husky", ".huskyrc", ".huskyrc.json", ".huskyrc.js", ".huskyrc.yaml", ".huskyrc.yml", "husky.config.js"}},
	{"pre-commit", []string{".pre-commit-config.yaml", ".pre-commit-config.yml"}},
	{"lefthook", lefthookFiles()},
	{"overcommit", []string{".overcommit.yml", ".git-hooks"}},
	// hk (jdx): its hook is `exec hk run pre-commit --from-hook`; the steps' commands are in hk.pkl
	{"hk run ", []string{"hk.pkl", ".config/hk.pkl", "hk.local.pkl", ".config/hk.local.pkl"}},
}

func lefthookFiles() []string {
	out := []string{".lefthook", ".lefthook-local", ".config/lefthook.yml", ".config/lefthook.yaml"}
	for _, base := range []string{"lefthook", ".lefthook", "lefthook-local", ".lefthook-local"} {
		for _, ext := range []string{".yml", ".yaml", ".toml", ".json"} {
			out = append(out, base+ext)
		}
	}
	return out
}

// preCommitConfig finds the config file named in the hook pre-commit installs (ARGS=(hook-impl --config=FILE …)).
var preCommitConfig = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`--config[= ]([^\s)"']+)`) })

// GitPointed returns the root-relative paths that the repositories point git at, beyond the fixed names of
// Protected: the folder core.hooksPath names, the files their configs include, the programs their configs name
// inside the root (transcrypt's .git/crypt/clean, a project's fsmonitor script), a bare repository's config, hooks
// and info, and the config files of the hook managers whose hook is installed. Writing any of them makes git (or
// the hook git runs) run something later, outside the sandbox. The broker reads the facts; this decides.
func GitPointed(repos []GitRepo) []string {
	seen := map[string]bool{}
	add := func(p string) {
		p = path.Clean("/" + p)[1:]
		if p != "" && !seen[p] {
			seen[p] = true
		}
	}
	for _, r := range repos {
		if r.Bare {
			for _, inner := range []string{"config", "config.worktree", "hooks", "info", "commondir"} {
				add(path.Join(r.Dir, inner))
			}
		}
		for _, inc := range r.Includes {
			add(inc)
		}
		for _, prog := range r.Programs {
			add(prog) // git runs it (a filter, an fsmonitor, a textconv in the user's config): changed, it runs the command's code
		}
		if r.HooksPath != "" {
			if path.Clean("/"+r.HooksPath) == "/" || path.Clean(r.HooksPath) == path.Clean(r.Top) {
				// The hooks folder is a work tree's top (core.hooksPath = .): its hooks by name, never the whole tree.
				for _, n := range hookNames {
					add(path.Join(r.HooksPath, n))
				}
			} else {
				add(r.HooksPath)
				if path.Base(r.HooksPath) == "_" {
					add(path.Dir(r.HooksPath)) // husky 9: .husky/_/h runs the scripts in .husky/
				}
			}
		}
		for _, h := range r.Hooks {
			head := bytes.ToLower(h.Head)
			for _, m := range hookManagers {
				if !bytes.Contains(head, []byte(m.mark)) {
					continue
				}
				for _, f := range m.files {
					add(path.Join(r.Top, f))
				}
				if m.mark == "pre-commit" {
					for _, sub := range preCommitConfig().FindAllSubmatch(h.Head, -1) {
						if f := string(sub[1]); !path.IsAbs(f) && !strings.Contains(f, "..") {
							add(path.Join(r.Top, f))
						}
					}
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// pointed reports whether rel (root-relative) is, or is below, one of the paths the repositories point git at.
func pointed(rel string, st *State) bool {
	if len(st.Pointed) == 0 {
		return false
	}
	rel = strings.Trim(foldName(rel), "/")
	for _, p := range st.Pointed {
		p = foldName(p)
		if _, in := pathglob.Within(p, rel); in {
			return true
		}
	}
	return false
}
