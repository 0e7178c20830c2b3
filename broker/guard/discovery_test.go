package guard

import (
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// TestGuardFindsRepositoriesAsGitDoes: git's is_git_directory follows links to objects/ and refs/ and reads a
// commondir that is a link, and git reads the config and runs the hooks of the folder a commondir names, which
// needs no HEAD. The guard must find those repositories too. Each case's control runs without the guard.
func TestGuardFindsRepositoriesAsGitDoes(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const fsm = `printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > fsm && chmod +x fsm && `
	const worktree = `mkdir -p common/objects common/refs gd w && echo 'ref: refs/heads/main' > gd/HEAD && echo 'gitdir: ../gd' > w/.git && `
	cases := []gitCase{
		{name: "bare repository of links", attack: fsm + `mkdir -p data/o data/r planted/sub &&
			ln -s ../data/o planted/objects && ln -s ../data/r planted/refs && echo 'ref: refs/heads/main' > planted/HEAD &&
			printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = %s/fsm\n' "$PWD" > planted/config`,
			in: "planted/sub", then: []string{"status"}, marker: "planted/PWNED"},
		{name: "bare repository whose objects and refs link outside", attack: fsm + `mkdir -p planted/sub &&
			ln -s /usr planted/objects && ln -s /usr planted/refs && echo 'ref: refs/heads/main' > planted/HEAD &&
			printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = %s/fsm\n' "$PWD" > planted/config`,
			in: "planted/sub", then: []string{"status"}, marker: "planted/PWNED"},
		{name: "config of the common folder", attack: fsm + worktree + `echo ../common > gd/commondir &&
			printf '[core]\n\tbare = false\n\tfsmonitor = %s/fsm\n' "$PWD" > common/config`,
			in: "w", then: []string{"status"}, marker: "w/PWNED"},
		{name: "hook of the common folder", attack: worktree + `echo ../common > gd/commondir && mkdir common/hooks &&
			printf '[core]\n\tbare = false\n' > common/config &&
			printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > common/hooks/pre-commit && chmod +x common/hooks/pre-commit`,
			in: "w", then: []string{"commit", "-q", "--allow-empty", "-m", "x"}, marker: "w/PWNED"},
		{name: "common folder whose name ends in a space", attack: fsm + `mkdir -p 'c /objects' 'c /refs' gd w &&
			echo 'ref: refs/heads/main' > gd/HEAD && echo 'gitdir: ../gd' > w/.git && printf '../c \n' > gd/commondir &&
			printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = %s/fsm\n' "$PWD" > 'c /config'`,
			in: "w", then: []string{"status"}, marker: "w/PWNED"},
		{name: "commondir that is a link", attack: fsm + worktree + `echo ../common > gd/cd && ln -s cd gd/commondir &&
			printf '[core]\n\tbare = false\n\tfsmonitor = %s/fsm\n' "$PWD" > common/config`,
			in: "w", then: []string{"status"}, marker: "w/PWNED"},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// TestGuardWalksGitDataOfAPlantedRepository: the walk leaves out a git folder's objects, refs, logs and lfs, data
// git never runs; in a folder that only looks like a bare repository (not a .git folder), a repository planted
// below them is found all the same, since the user may enter it. Control: without the guard git runs it.
func TestGuardWalksGitDataOfAPlantedRepository(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	for _, data := range []string{"objects", "refs", "logs", "lfs"} {
		t.Run(data, func(t *testing.T) {
			attack := `mkdir -p fake/objects fake/refs && echo 'ref: refs/heads/main' > fake/HEAD && ` +
				`git init -q fake/` + data + `/n && printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > fsm && chmod +x fsm && ` +
				`git -C fake/` + data + `/n config core.fsmonitor "$PWD/fsm"`
			in := "fake/" + data + "/n"
			root, _ := guarded(t, "", attack, false)
			userGit(t, filepath.Join(root, in), "status")
			if !exists(filepath.Join(root, in, "PWNED")) {
				t.Fatalf("control: the attack did not work without the guard")
			}
			root, rep := guarded(t, "", attack, true)
			out, _ := userGit(t, filepath.Join(root, in), "status")
			if exists(filepath.Join(root, in, "PWNED")) {
				t.Errorf("git ran the planted program after the guard (report %+v)\n%s", rep, out)
			}
		})
	}
}

// TestGuardUndoesWhatGitFindsInNodeModules: the walk leaves node_modules' files to the project, but not what git
// finds there: git status in a package's folder (a shell prompt's, or an editor's that opened a file there) runs the
// config and hooks of a repository planted in it or above it. Each case's control runs without the guard.
func TestGuardUndoesWhatGitFindsInNodeModules(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const fsm = `printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > fsm && chmod +x fsm && `
	cases := []gitCase{
		{name: "a new repository in a package", attack: fsm + `mkdir -p node_modules/x/lib && git init -q node_modules/x &&
			git -C node_modules/x config core.fsmonitor "$PWD/fsm"`,
			in: "node_modules/x/lib", then: []string{"status"}, marker: "node_modules/x/PWNED"},
		{name: "a repository deep in a nested package", attack: fsm + `mkdir -p node_modules/a/node_modules/@s/b/dist/esm &&
			git init -q node_modules/a/node_modules/@s/b/dist && git -C node_modules/a/node_modules/@s/b/dist config core.fsmonitor "$PWD/fsm"`,
			in: "node_modules/a/node_modules/@s/b/dist/esm", then: []string{"status"},
			marker: "node_modules/a/node_modules/@s/b/dist/PWNED"},
		{name: "node_modules made a repository", attack: fsm + `mkdir -p node_modules/x && git init -q node_modules &&
			git -C node_modules config core.fsmonitor "$PWD/fsm"`,
			in: "node_modules/x", then: []string{"status"}, marker: "node_modules/PWNED"},
		{name: "a package shaped like a bare repository", attack: fsm + `mkdir -p node_modules/p/objects node_modules/p/refs node_modules/p/src &&
			echo 'ref: refs/heads/main' > node_modules/p/HEAD &&
			printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = %s/fsm\n' "$PWD" > node_modules/p/config`,
			in: "node_modules/p/src", then: []string{"status"}, marker: "node_modules/p/PWNED"},
		{name: "a hook in a package's new repository", attack: `mkdir -p node_modules/x && git init -q node_modules/x &&
			printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > node_modules/x/.git/hooks/pre-commit && chmod +x node_modules/x/.git/hooks/pre-commit`,
			in: "node_modules/x", then: []string{"commit", "-q", "--allow-empty", "-m", "x"}, marker: "node_modules/x/PWNED"},
		{name: "a .git file in a package to a planted folder", attack: fsm + `mkdir -p node_modules/x && git init -q --bare node_modules/.cache/g &&
			git --git-dir=node_modules/.cache/g config core.bare false && git --git-dir=node_modules/.cache/g config core.fsmonitor "$PWD/fsm" &&
			echo 'gitdir: ../.cache/g' > node_modules/x/.git`,
			in: "node_modules/x", then: []string{"status"}, marker: "node_modules/x/PWNED"},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}
