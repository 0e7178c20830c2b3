package attacks

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Git finds a repository by what it can open, not by what a directory listing says: is_git_directory (setup.c)
// follows links to objects/ and refs/ (access(X_OK)), a commondir that is a link, and reads the config and hooks of
// the folder a commondir names, which needs no HEAD of its own. These cases plant each such repository; controls:
// each runs outside the sandbox (TestDeferredGitFindsWhatAListingMisses's unsandboxed pass).
var discoveryCases = []deferredCase{
	{name: "a planted bare repository whose objects and refs are links", attack: planter("fsm") +
		`mkdir -p data/o data/r planted/sub && ln -s ../data/o planted/objects && ln -s ../data/r planted/refs &&
		echo 'ref: refs/heads/main' > planted/HEAD &&
		printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = %s/fsm\n' "$PWD" > planted/config`,
		in: "planted/sub", git: []string{"status"}, marker: "planted/PWNED"},
	{name: "the config of the folder a planted git folder's commondir names", attack: planter("fsm") +
		`mkdir -p common/objects common/refs gd w && echo 'ref: refs/heads/main' > gd/HEAD && echo ../common > gd/commondir &&
		printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = %s/fsm\n' "$PWD" > common/config &&
		echo 'gitdir: ../gd' > w/.git`,
		in: "w", git: []string{"status"}, marker: "w/PWNED"},
	{name: "a hook in the folder a planted git folder's commondir names", attack: ident +
		`mkdir -p common/objects common/refs common/hooks gd w && echo 'ref: refs/heads/main' > gd/HEAD &&
		echo ../common > gd/commondir && printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n' > common/config &&
		echo 'gitdir: ../gd' > w/.git && ` + planter("common/hooks/pre-commit"),
		in: "w", git: []string{"commit", "-q", "--allow-empty", "-m", "x"}, marker: "w/PWNED"},
	{name: "a git folder whose commondir is a link", attack: planter("fsm") +
		`mkdir -p common/objects common/refs gd w && echo 'ref: refs/heads/main' > gd/HEAD && echo ../common > gd/cd &&
		ln -s cd gd/commondir &&
		printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = %s/fsm\n' "$PWD" > common/config &&
		echo 'gitdir: ../gd' > w/.git`,
		in: "w", git: []string{"status"}, marker: "w/PWNED"},
	// git trims only line ends from a commondir and a .git file, never spaces: "../common " is another folder.
	{name: "the config of a common folder whose name ends in a space", attack: planter("fsm") +
		`mkdir -p 'common /objects' 'common /refs' gd w && echo 'ref: refs/heads/main' > gd/HEAD &&
		printf '../common \n' > gd/commondir && echo 'gitdir: ../gd' > w/.git &&
		printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = %s/fsm\n' "$PWD" > 'common /config'`,
		in: "w", git: []string{"status"}, marker: "w/PWNED"},
	{name: "a .git file whose path ends in a space, to a repository in node_modules", attack: planter("fsm") +
		`mkdir -p node_modules/x w && git init -q --bare 'node_modules/x/g ' && git --git-dir='node_modules/x/g ' config core.bare false &&
		git --git-dir='node_modules/x/g ' config core.fsmonitor "$PWD/fsm" && printf 'gitdir: ../node_modules/x/g \n' > w/.git`,
		in: "w", git: []string{"status"}, marker: "w/PWNED"},
	{name: "a repository below the refs of a folder that looks like a bare repository", attack: planter("fsm") +
		`mkdir -p fake/objects fake/refs && echo 'ref: refs/heads/main' > fake/HEAD && git init -q fake/refs/n &&
		git -C fake/refs/n config core.fsmonitor "$PWD/fsm"`,
		in: "fake/refs/n", git: []string{"status"}, marker: "fake/refs/n/PWNED"},
}

// TestDeferredGitFindsWhatAListingMisses: a repository git finds through links or a commondir runs nothing a
// sandboxed command left in it (control: outside the sandbox each runs).
func TestDeferredGitFindsWhatAListingMisses(t *testing.T) {
	for _, dc := range discoveryCases {
		t.Run(dc.name, func(t *testing.T) { runDeferredCase(t, dc) })
	}
}

// TestDeferredDiscoveryAsNobody reruns the tests of this file as the user nobody.
func TestDeferredDiscoveryAsNobody(t *testing.T) {
	rerunAsNobody(t, "^TestDeferred(GitFindsWhatAListingMisses|EditorFilesInAFolderThatLooksLikeARepository|HomeBin)$",
		"TestDeferredGitFindsWhatAListingMisses", "TestDeferredEditorFilesInAFolderThatLooksLikeARepository", "TestDeferredHomeBin")
}

// TestDeferredEditorFilesInAFolderThatLooksLikeARepository: editor files, .envrc and mise's config a command
// creates inside a folder it made look like a bare repository (HEAD, objects/, refs/) are removed like anywhere
// else. Control: outside the sandbox they stay.
func TestDeferredEditorFilesInAFolderThatLooksLikeARepository(t *testing.T) {
	files := []string{"p/.zed/settings.json", "p/.vscode/tasks.json", "p/.envrc", "p/mise.toml", "p/sub/.nvim.lua"}
	cmd := "mkdir -p p/objects p/refs && echo 'ref: refs/heads/main' > p/HEAD; "
	for _, f := range files {
		cmd += "mkdir -p $(dirname " + f + "); echo '{}' > " + f + "; "
	}
	plantFiles(t, cmd, files, func(f string) string { return strings.Join(strings.Split(f, "/")[:2], "/") })
}

// TestDeferredHomeBin: with the project folder the user's home, a program a command plants in ~/bin is removed:
// Debian's, Ubuntu's and Fedora's shell start-up files put ~/bin first in PATH when it exists, so the next login
// shell would run it for "git". Controls: outside the sandbox the login shell's git is the planted one; with the
// home elsewhere the sandboxed command keeps it.
func TestDeferredHomeBin(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const attack = `mkdir -p bin && printf '#!/bin/sh\ntouch "$HOME/PWNED"\n' > bin/git && chmod +x bin/git`
	// loginGit runs git in a login shell of that home, whose .profile is Debian's.
	loginGit := func(home string) bool {
		cmd := exec.Command("bash", "-lc", "git --version")
		cmd.Dir = home
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home}
		cmd.Run()
		return brokertest.Exists(filepath.Join(home, "PWNED"))
	}
	debianProfile := func(root string) {
		brokertest.MustWrite(t, filepath.Join(root, ".profile"), "if [ -d \"$HOME/bin\" ] ; then\n    PATH=\"$HOME/bin:$PATH\"\nfi\n")
	}
	run := func(homeIsRoot, sandboxed bool) (string, *execv1.Result) {
		return runInAHome(t, debianProfile, homeIsRoot, sandboxed, attack)
	}
	if root, res := run(true, false); !loginGit(root) {
		t.Fatalf("control: outside the sandbox the login shell did not run the planted git: %s", res.GetContent())
	}
	if root, res := run(false, true); !brokertest.Exists(filepath.Join(root, "bin/git")) {
		t.Fatalf("control: with the home elsewhere the command's bin/git should stay: %s", res.GetContent())
	}
	root, res := run(true, true)
	if brokertest.Exists(filepath.Join(root, "bin/git")) || loginGit(root) {
		t.Errorf("bin/git left by a sandboxed command in the home folder, and run by a login shell: %s", res.GetContent())
	}
	// There before: read-only for commands.
	root = filepath.Join(t.TempDir(), "u")
	brokertest.MustWrite(t, filepath.Join(root, "bin/tool"), "#!/bin/sh\n")
	t.Setenv("HOME", root)
	e := brokertest.NewAt(t, root, filepath.Join(t.TempDir(), "garuda"))
	c := e.Client()
	res = brokertest.Sh(t, c, e.Open(c), `echo 'touch "$HOME/PWNED"' >> bin/tool; printf '#!/bin/sh\n' > bin/git`)
	if got := brokertest.FileText(filepath.Join(root, "bin/tool")); got != "#!/bin/sh\n" || brokertest.Exists(filepath.Join(root, "bin/git")) {
		t.Errorf("a command changed the user's ~/bin: %q (%s)", got, res.GetContent())
	}
}
