package policy

import (
	"slices"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// protectedDirs are folders whose content can run code or change settings when a program (git, an editor, a
// shell, an agent) next opens the project. They are protected at any depth, matched case-insensitively.
// Editors' project folders are here because they name programs the editor runs when it opens the project:
// Zed's settings and tasks (language servers, tasks), VS Code's tasks and settings, JetBrains' run configurations.
// Helix's .helix/languages.toml names language-server programs; a dev container's initializeCommand runs on the
// host each time the editor reopens the project in its container; mise runs the hooks and sources the scripts its
// project files name whenever the user's shell enters the folder, and trusts a file by its path, not its content.
// Other agents' project folders name the MCP servers, hooks and commands they run (Cursor, Gemini CLI, Codex,
// Continue, opencode, Roo Code, Kilo Code, Amazon Q, Kiro, Qwen Code's settings.json, Crush's workspace crush.json,
// Windsurf's hooks.json, whose session_start hooks run unasked, Cline's hooks/ scripts in .clinerules/ and .cline/,
// run at TaskStart), like Garuda's and Claude Code's own.
var protectedDirs = []string{".garuda", ".claude", ".agents", ".cursor", ".gemini", ".codex", ".continue", ".opencode",
	".roo", ".kilocode", ".amazonq", ".kiro", ".qwen", ".crush", ".windsurf", ".clinerules", ".cline", ".vscode", ".idea",
	".zed", ".helix", ".devcontainer", ".ssh", ".direnv", ".mise", "mise"}

// protectedFiles are single files of the same nature, protected at any depth.
var protectedFiles = []string{
	".gitmodules", ".envrc", ".mcp.json", ".gitconfig", ".devcontainer.json",
	// other agents' single-file configuration: aider's (its lint and test commands run by themselves), Continue's
	".aider.conf.yml", ".continuerc.json",
	// git-lfs reads lfs.url from it: where git push sends the project's large files
	".lfsconfig",
	// run by an editor when it opens the project: Neovim's and Vim's exrc files, Emacs's directory variables
	".nvim.lua", ".nvimrc", ".exrc", ".vimrc", ".gvimrc", ".lazy.lua", ".dir-locals.el", ".dir-locals-2.el",
	// asdf's and mise's .tool-versions name `path:` installs whose programs the shims run
	".tool-versions",
	// lazygit loads the .lazygit.yml of every folder above a repository (its pager runs on the diff it shows at start)
	".lazygit.yml",
	// opencode's project config: it starts the local MCP servers it names at launch, without a question
	"opencode.json", "opencode.jsonc",
	// Crush's: it starts the MCP servers and language servers they name at launch, runs the $(commands) in their
	// values, and runs crushrc, a bash script, as its configuration
	"crush.json", ".crush.json", "crushrc", ".crushrc",
	// rustup's toolchain file: `path = "/abs/dir"` makes every cargo and rustc run there (by the user, or by
	// rust-analyzer when the editor opens the project) DIR/bin's
	"rust-toolchain.toml", "rust-toolchain",
	// shell start-up files: run by every new shell when the root is (or contains) a home folder
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".inputrc",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
	".cshrc", ".tcshrc", ".login", ".kshrc", ".mkshrc",
}

// hgInner are the entries of a Mercurial .hg folder that make hg run code or read another repository's config: its
// hgrc ([hooks], [extensions]), share-safe's hgrc-not-shared, and sharedpath (a shared repository's source).
var hgInner = []string{"hgrc", "hgrc-not-shared", "sharedpath"}

// WorkspaceSuffix ends the name of a VS Code workspace file, protected at any depth: the one protected name that
// does not start with a dot.
const WorkspaceSuffix = ".code-workspace"

// gitInner are the entries inside a .git folder (of the root or of a nested repository or submodule, at any
// depth) that make git run code or read redirected settings.
var gitInner = []string{"hooks", "config", "config.worktree", "info", "commondir", "gitdir"}

// gitFrontEnd are the files a git front end loads from a git folder (a worktree's own included) as its own
// configuration, which git itself never writes: lazygit's lazygit.yml, whose pager, external diff and log commands
// it runs unasked when it opens the repository and shows a diff.
var gitFrontEnd = []string{"lazygit.yml"}

// Protected reports whether rel, a root-relative slash path, is protected: a write or edit of it always asks,
// and commands see it read-only. It is the one list for both. Matching is case-insensitive and ignores the
// characters that case-insensitive file systems ignore, because on such a file system ".GIT/hooks" and
// ".g\u200cit/hooks" are the same folder as ".git/hooks" (CVE-2014-9390).
func Protected(rel string) bool {
	rel = foldName(rel)
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	for i, s := range segs {
		switch {
		case s == ".git":
			// A worktree's or submodule's ".git" file points git at another folder with its own config and
			// hooks: writing it, or the folder itself, redirects git.
			if i == len(segs)-1 {
				return true
			}
			for _, inner := range segs[i+1:] {
				if contains(gitInner, inner) || contains(gitFrontEnd, inner) {
					return true
				}
			}
			// .git/modules/<name>/... holds submodules' own repositories: the loop above finds their
			// hooks and config because any later segment counts.
		case s == ".hg" && i+1 < len(segs) && contains(hgInner, segs[i+1]):
			return true // Mercurial runs the hooks and loads the extensions its hgrc names on hg status
		case s == ".github" && i+1 < len(segs) && segs[i+1] == "hooks":
			return true // GitHub Copilot CLI runs the hooks of .github/hooks/*.json (sessionStart among them) on its own
		case contains(protectedDirs, s):
			return true
		case contains(protectedFiles, s):
			return true
		case strings.HasSuffix(s, WorkspaceSuffix):
			return true // a VS Code workspace file holds settings and tasks like .vscode/
		case miseConfig(s):
			return true // mise.toml, .mise.local.toml, mise.<env>.toml (its folders are in protectedDirs)
		}
	}
	return false
}

// GitFrontEndConfig reports whether rel, a root-relative slash path, is or lies in a file that a git front end
// loads from a .git folder (gitFrontEnd). git never writes one, so the command guard removes one a command created
// even inside a git folder, where it otherwise neutralises what git made (a new repository's config and hooks).
func GitFrontEndConfig(rel string) bool {
	segs := strings.Split(strings.Trim(foldName(rel), "/"), "/")
	for i, s := range segs {
		if s == ".git" && slices.ContainsFunc(segs[i+1:], func(n string) bool { return contains(gitFrontEnd, n) }) {
			return true
		}
	}
	return false
}

// miseConfig reports whether a folded name is one of mise's project configuration files: [.]mise[.<env>][.local].toml.
func miseConfig(name string) bool {
	return strings.HasPrefix(strings.TrimPrefix(name, "."), "mise.") && strings.HasSuffix(name, ".toml")
}

// plainPrefixes start every protected name that does not start with a dot (but workspace files), or that is
// protected below a folder that is not (.github/hooks).
var plainPrefixes = []string{"mise", "opencode", "rust-toolchain", "crush", "hooks", "hgrc", "sharedpath"}

// MayBeProtected is a quick test of one name, for walks: false means no path ending in name is Protected unless
// a folder above it is (a plain name that is neither a workspace file nor one plainPrefixes starts). Every other
// protected name starts with a dot; a name that is not plain ASCII may fold to a protected one.
func MayBeProtected(name string) bool {
	if name == "" || name[0] == '.' || strings.HasSuffix(name, WorkspaceSuffix) {
		return true
	}
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return true
		}
	}
	for _, plain := range plainPrefixes {
		if len(name) >= len(plain) && strings.EqualFold(name[:len(plain)], plain) {
			return true
		}
	}
	return false
}

// HomeIn returns the user's home folder relative to root ("" for the root itself) and true when the root is the
// home folder or holds it; the home rule of HomeProtected applies there.
func HomeIn(root, userHome string) (string, bool) {
	if userHome == "" || userHome == "/" {
		return "", false
	}
	return pathglob.Within(root, userHome)
}

// HomeProtected reports whether rel, a root-relative slash path, is or lies below an entry whose name starts with
// a dot, or ~/bin, directly inside home (root-relative; "" is the root). A home folder's dot files and folders
// configure what the user runs later, unsandboxed: git reads ~/.config/git/config, login shells put ~/.local/bin
// and ~/bin (Debian's, Ubuntu's and Fedora's start-up files, when it exists) first in PATH, systemd starts
// ~/.config/systemd/user units, editors load ~/.vim and ~/.emacs.d. Defends against a command that plants them
// when the project folder is (or holds) the user's home. Its .git (a dotfiles repository) is left to the rules of
// every repository.
func HomeProtected(rel, home string) bool {
	rel = strings.Trim(foldName(rel), "/")
	home = strings.Trim(foldName(home), "/")
	if home != "" {
		sub, in := pathglob.Within(home, rel)
		if !in {
			return false
		}
		rel = sub
	}
	first, _, _ := strings.Cut(rel, "/")
	return strings.HasPrefix(first, ".") && first != ".git" || first == "bin"
}

// ProtectedNames returns the root-relative names the sandbox makes read-only for commands (binding the ones
// that exist and creating the missing ones empty, so a command cannot create them). Nested repositories'
// ".git/hooks" and ".git/config" are protected too: the sandbox must find those by walking the root, since
// this package does no I/O. Every name returned here is Protected.
func ProtectedNames() (dirs, files []string) {
	dirs = append([]string{".git/hooks", ".git/info"}, protectedDirs...)
	files = append([]string{".git/config", ".git/config.worktree", ".git/commondir"}, protectedFiles...)
	return dirs, files
}

// foldName lower-cases a path and removes the code points that HFS+ ignores in names, so that look-alike
// spellings of a protected name are caught (defends against case and ignorable-character tricks).
func foldName(s string) string {
	s = strings.ToLower(s)
	if strings.IndexFunc(s, ignorable) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if ignorable(r) {
			return -1
		}
		return r
	}, s)
}

func ignorable(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff, r == 0x00ad:
		return true
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
