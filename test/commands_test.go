package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
)

func garuda(t *testing.T, home, stdin string, args ...string) (string, error) {
	t.Helper()
	needBins(t)
	cmd := exec.Command(bins.garuda, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home}
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// garuda setup, scripted: the key lands in credentials (0600) and the model becomes the default, through the broker.
func TestSetupScripted(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	out, err := garuda(t, home, "sk-test-key\n", "setup", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--key-stdin")
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	fi, err := os.Stat(filepath.Join(home, "credentials"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials: %v %v", fi, err)
	}
	data, _ := os.ReadFile(filepath.Join(home, "credentials"))
	if !strings.Contains(string(data), "sk-test-key") {
		t.Fatalf("credentials do not hold the key")
	}
	var models map[string]any
	raw, _ := os.ReadFile(filepath.Join(home, "models.json"))
	if json.Unmarshal(raw, &models) != nil || models["default"] != "claude-sonnet-4-5" {
		t.Fatalf("models.json: %s", raw)
	}
	if strings.Contains(out, "sk-test-key") {
		t.Errorf("setup printed the key:\n%s", out)
	}
	// Bad input: an unknown provider is refused with a reason and writes nothing new.
	if out, err := garuda(t, filepath.Join(t.TempDir(), "h2"), "k\n", "setup", "--provider", "nope", "--model", "m",
		"--key-stdin"); err == nil || !strings.Contains(out, "unknown provider") {
		t.Fatalf("unknown provider: %v\n%s", err, out)
	}
}

// garuda trust pins the project's settings; a changed file is no longer trusted.
func TestTrustPinsProjectSettings(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".garuda"), 0o755)
	settings := filepath.Join(root, ".garuda", "settings.json")
	os.WriteFile(settings, []byte(`{"permissions":{"allow":["bash(make test)"]}}`), 0o644)

	out, err := garuda(t, home, "", "trust", "--yes", root)
	if err != nil || !strings.Contains(out, "bash(make test)") || !strings.Contains(out, "Trusted") {
		t.Fatalf("trust: %v\n%s", err, out)
	}
	out, _ = garuda(t, home, "", "trust", "--yes", root)
	if !strings.Contains(out, "already trusted") {
		t.Fatalf("second trust: %s", out)
	}
	// The pin is to the content: a changed file needs a new yes.
	os.WriteFile(settings, []byte(`{"permissions":{"allow":["bash(rm -rf *)"]}}`), 0o644)
	out, err = garuda(t, home, "", "trust", root)
	if err == nil || strings.Contains(out, "already trusted") || !strings.Contains(out, "bash(rm -rf *)") {
		t.Fatalf("trust after a change (no terminal, no --yes): %v\n%s", err, out)
	}
}

// garuda audit verify names a changed record.
func TestAuditVerifyFindsAChange(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if out, err := garuda(t, home, "k\n", "setup", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--key-stdin"); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	out, err := garuda(t, home, "", "audit", "verify")
	if err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("verify of an intact log: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(home, "audit", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("setup left no audit record")
	}
	data, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], []byte(strings.Replace(string(data), "anthropic", "anthropiC", 1)), 0o600)
	out, err = garuda(t, home, "", "audit", "verify", files[0])
	if err == nil || !strings.Contains(out, "BROKEN") {
		t.Fatalf("verify of a changed log: %v\n%s", err, out)
	}
}

// garuda setup --test sends one tiny request with the saved key: a key the provider refuses fails setup with the
// provider's word; one it accepts succeeds.
func TestSetupTestsTheKey(t *testing.T) {
	for _, tc := range []struct {
		turn fakeprovider.Turn
		ok   bool
	}{
		{fakeprovider.Turn{Text: "OK"}, true},
		{fakeprovider.Turn{Status: 401, Message: "invalid x-api-key"}, false},
	} {
		srv, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{tc.turn})
		if err != nil {
			t.Fatal(err)
		}
		home := filepath.Join(t.TempDir(), "home")
		os.MkdirAll(home, 0o700)
		models := `{"providers":{"local":{"type":"anthropic","base_url":"` + srv.URL + `","api_key_env":"LOCAL_API_KEY"}},"models":{"m":{"provider":"local","id":"fake"}}}`
		os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600)
		out, err := garuda(t, home, "the-key\n", "setup", "--provider", "local", "--model", "m", "--key-stdin", "--test")
		srv.Close()
		if tc.ok && (err != nil || !strings.Contains(out, "The key works")) {
			t.Fatalf("a good key: %v\n%s", err, out)
		}
		if !tc.ok && (err == nil || !strings.Contains(out, "test request failed")) {
			t.Fatalf("a refused key: %v\n%s", err, out)
		}
	}
}
