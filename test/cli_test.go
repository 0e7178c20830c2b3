package test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs garuda with env added to a clean environment and returns stdout, stderr and the exit code.
func runGaruda(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	needBins(t)
	cmd := exec.Command(bins.garuda, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "TMPDIR=" + t.TempDir()}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("garuda %v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// noWrapper fails when a user-facing text carries what only the source explains.
func noWrapper(t *testing.T, what, text string) {
	t.Helper()
	for _, bad := range []string{"rpc error", "code = ", "desc = ", "garuda: exit ", "bad request", "configuration error"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s says %q:\n%s", what, bad, text)
		}
	}
}

// Every subcommand's --help prints its usage on stdout and exits 0.
func TestCLIHelpExitsZero(t *testing.T) {
	home := t.TempDir()
	env := []string{"GARUDA_HOME=" + home, "HOME=" + home}
	for _, args := range [][]string{{"--help"}, {"help"}, {"acp", "--help"}, {"setup", "--help"}, {"doctor", "--help"},
		{"trust", "--help"}, {"undo", "--help"}, {"audit", "--help"}, {"audit", "verify", "--help"}, {"doctor", "-h"}} {
		out, errOut, code := runGaruda(t, env, "", args...)
		if code != 0 || !strings.Contains(out, "usage: garuda") {
			t.Errorf("garuda %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
		noWrapper(t, strings.Join(args, " "), out+errOut)
	}
	// Control: a wrong flag is an error that names the way to the usage.
	_, errOut, code := runGaruda(t, env, "", "doctor", "--nope")
	if code == 0 || !strings.Contains(errOut, "garuda doctor --help") {
		t.Errorf("a wrong flag: exit %d, %q", code, errOut)
	}
}

// doctor fails on a broken configuration with the broker's words; its key line is right for a provider that needs
// no key.
func TestDoctorBrokenConfigAndKeylessProvider(t *testing.T) {
	home := t.TempDir()
	env := []string{"GARUDA_HOME=" + home, "HOME=" + home}
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte("{\"default\": \"x\",\n \"models\": {,}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runGaruda(t, env, "", "doctor")
	if code == 0 || !strings.Contains(out, "model") || !strings.Contains(out, "BROKEN") || !strings.Contains(out, "models.json") {
		t.Errorf("doctor with a broken models.json: exit %d\n%s%s", code, out, errOut)
	}
	noWrapper(t, "doctor", out+errOut)

	models := `{"default":"llama","providers":{"ollama":{"type":"openai","base_url":"http://127.0.0.1:9/v1"}},` +
		`"models":{"llama":{"provider":"ollama","id":"llama3"}}}`
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runGaruda(t, env, "", "doctor")
	if code != 0 || !strings.Contains(out, "llama (ollama, llama3), no key (the provider needs none)") {
		t.Errorf("doctor with a key-less provider: exit %d\n%s%s", code, out, errOut)
	}
}

// setup: an unknown model id is refused with the close names unless --force; an unknown provider lists the known
// ones; flags work after positional arguments.
func TestSetupUnknownModelAndProvider(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	env := []string{"GARUDA_HOME=" + home, "HOME=" + home}
	_, errOut, code := runGaruda(t, env, "k\n", "setup", "--provider", "anthropic", "--model", "claude-sonet-4-5", "--key-stdin")
	if code == 0 || !strings.Contains(errOut, "did you mean claude-sonnet-4-5") || !strings.Contains(errOut, "--force") {
		t.Errorf("unknown model: exit %d, %q", code, errOut)
	}
	if strings.Count(errOut, "setup:") > 1 {
		t.Errorf("doubled prefix: %q", errOut)
	}
	noWrapper(t, "setup", errOut)
	if _, err := os.Stat(filepath.Join(home, "models.json")); err == nil {
		t.Errorf("a refused model was stored")
	}
	_, errOut, code = runGaruda(t, env, "k\n", "setup", "--provider", "anthropic", "--model", "claude-sonnet-9", "--key-stdin", "--force")
	if data, _ := os.ReadFile(filepath.Join(home, "models.json")); code != 0 || !strings.Contains(string(data), "anthropic/claude-sonnet-9") {
		t.Errorf("--force: exit %d, %q, models.json %s", code, errOut, data)
	}
	_, errOut, code = runGaruda(t, env, "k\n", "setup", "--provider", "nope", "--model", "m", "--key-stdin")
	if code == 0 || !strings.Contains(errOut, `unknown provider "nope"; known: anthropic, openai`) {
		t.Errorf("unknown provider: exit %d, %q", code, errOut)
	}

	// trust DIR --yes: the flag after the folder counts.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".garuda"), 0o755)
	os.WriteFile(filepath.Join(root, ".garuda", "settings.json"), []byte(`{"permissions":{"allow":["bash(make test)"]}}`), 0o644)
	out, errOut, code := runGaruda(t, env, "", "trust", root, "--yes")
	if code != 0 || !strings.Contains(out, "Trusted") {
		t.Errorf("trust DIR --yes: exit %d\n%s%s", code, out, errOut)
	}
}

// With no GARUDA_HOME and no $HOME (env -i, some services and containers), or a relative one, every command that starts
// the broker says what to set, not that the broker exited.
func TestNoHomeIsSaid(t *testing.T) {
	for _, home := range []string{"", "HOME=rel"} {
		for _, args := range [][]string{{"doctor"}, {"acp"}, {"undo", "--list"}, {"run", "--cwd", t.TempDir(), "hi"}} {
			out, errOut, code := runGaruda(t, []string{home}, "", args...)
			if code == 0 || !strings.Contains(out+errOut, "set HOME, or GARUDA_HOME to an absolute folder") ||
				strings.Contains(out+errOut, "exited unexpectedly") {
				t.Errorf("%q garuda %v: exit %d\nstdout:\n%s\nstderr:\n%s", home, args, code, out, errOut)
			}
		}
	}
}

// A relative GARUDA_HOME is refused with that reason, by every command that starts the broker.
func TestRelativeGarudaHomeIsRefused(t *testing.T) {
	for _, args := range [][]string{{"doctor"}, {"acp"}, {"undo", "--list"}} {
		out, errOut, code := runGaruda(t, []string{"GARUDA_HOME=rel/home", "HOME=" + t.TempDir()}, "", args...)
		if code == 0 || !strings.Contains(out+errOut, "GARUDA_HOME=rel/home must be an absolute path") {
			t.Errorf("garuda %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
		if strings.Contains(out+errOut, "connection reset") {
			t.Errorf("garuda %v says connection reset:\n%s", args, errOut)
		}
	}
}
