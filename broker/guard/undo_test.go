package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// TestDisableExecsReadsStepsAsGitDoes: git's own sequencer is the oracle. Each spelling of a step that git runs as
// an exec is commented out, and git then runs none (control: before, git runs each); a step the user had stays.
func TestDisableExecsReadsStepsAsGitDoes(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	const todo = "exec touch A\nx touch B\n  exec touch C\n\tx\ttouch D\nexec\ttouch E\nexec touch KEPT\n# exec touch F\n"
	kept := map[string]bool{"exec touch KEPT": true}
	for _, guarded := range []bool{false, true} {
		dir := t.TempDir()
		env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a",
			"GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
		sh := func(script string) string {
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir, cmd.Env = dir, env
			out, _ := cmd.CombinedOutput()
			return string(out)
		}
		sh(`git init -q -b main && git commit -q --allow-empty -m one && H=$(git rev-parse HEAD) && mkdir .git/rebase-merge &&
			cd .git/rebase-merge && echo refs/heads/main > head-name && echo $H > onto && echo $H > orig-head && touch interactive done`)
		data := []byte(todo)
		if guarded {
			var n int
			data, n = disableExecs(data, kept)
			if n != 5 {
				t.Errorf("commented out %d steps, want 5:\n%s", n, data)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", rebaseTodo), data, 0o644); err != nil {
			t.Fatal(err)
		}
		out := sh("git rebase --continue")
		for _, m := range []string{"A", "B", "C", "D", "E"} {
			if ran := fileExists(filepath.Join(dir, m)); ran == guarded {
				t.Errorf("guarded %v: step %s ran %v\n%s\n%s", guarded, m, ran, data, out)
			}
		}
		if !fileExists(filepath.Join(dir, "KEPT")) || fileExists(filepath.Join(dir, "F")) {
			t.Errorf("guarded %v: KEPT ran %v (want true), F ran %v (want false)\n%s", guarded,
				fileExists(filepath.Join(dir, "KEPT")), fileExists(filepath.Join(dir, "F")), out)
		}
	}
	// Words git takes for no exec step (it refuses them as invalid lines) are left as they are.
	for _, line := range []string{"execute-me", "xx", "pick abc exec touch G", "#exec y", "", "\n", "break"} {
		if isExecStep(line) {
			t.Errorf("isExecStep(%q) = true", line)
		}
	}
	for _, line := range []string{"x", "exec", "x\n", "exec\r\n"} {
		if !isExecStep(line) {
			t.Errorf("isExecStep(%q) = false", line)
		}
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }
