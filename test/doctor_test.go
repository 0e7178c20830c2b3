package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// garuda doctor says whether a model is set up, as session/new would find it, and where its key comes from; never
// the key itself.
func TestDoctorShowsTheModel(t *testing.T) {
	needBins(t)
	home := t.TempDir()
	doctor := func(env ...string) string {
		t.Helper()
		cmd := exec.Command(bins.garuda, "doctor")
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home, "TMPDIR=" + t.TempDir()}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("garuda doctor: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := doctor(); !strings.Contains(out, "NOT SET UP") || !strings.Contains(out, "garuda setup") {
		t.Errorf("with no model, doctor says:\n%s", out)
	}
	models := `{"default":"fake","providers":{"local":{"type":"anthropic","base_url":"http://127.0.0.1:9","api_key_env":"LOCAL_API_KEY"}},"models":{"fake":{"provider":"local","id":"fake-model"}}}`
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	out := doctor("LOCAL_API_KEY=secret-value-123")
	if !strings.Contains(out, "fake (local, fake-model), key from $LOCAL_API_KEY") {
		t.Errorf("with a model and its key, doctor says:\n%s", out)
	}
	if strings.Contains(out, "secret-value-123") {
		t.Errorf("doctor printed the key:\n%s", out)
	}
	if out := doctor(); !strings.Contains(out, "NOT SET UP") {
		t.Errorf("with the key variable unset, doctor says:\n%s", out)
	}
}

// garuda-exec doctor shows the commands' network: the proxy, on or off and why, and what it decides by (issue 22).
func TestExecDoctorShowsTheProxy(t *testing.T) {
	needBins(t)
	out, _ := exec.Command(bins.exec, "doctor").CombinedOutput() // exits 1 where the sandbox is incomplete
	on := strings.Contains(string(out), "Network proxy: on.") && strings.Contains(string(out), "network(domain:...)")
	if !on && !strings.Contains(string(out), "Network proxy: off (no network namespace here)") {
		t.Errorf("garuda-exec doctor does not show the commands' proxy:\n%s", out)
	}
}
