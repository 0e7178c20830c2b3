package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// workspace is one run's temporary folders (a home, a GARUDA_HOME, a TMPDIR) and the environment garuda runs with
// in them, against the fake provider.
type workspace struct{ base, home, ghome, tmp string }

// newWorkspace makes the folders of a run under a new temp folder named for prefix; tmp is the TMPDIR to use, or
// empty for one inside the workspace.
func newWorkspace(prefix, tmp string) (*workspace, error) {
	base, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("make a temp dir: %w", err)
	}
	w := &workspace{base: base, home: filepath.Join(base, "home"), ghome: filepath.Join(base, "garuda-home"), tmp: tmp}
	if w.tmp == "" {
		w.tmp = filepath.Join(base, "tmp")
	}
	for _, d := range []string{w.home, w.ghome, w.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			os.RemoveAll(base)
			return nil, fmt.Errorf("make %s: %w", d, err)
		}
	}
	return w, nil
}

// writeModels writes a models.json whose default model is the fake provider's, with the given context window and
// output limit (tokens).
func (w *workspace) writeModels(fakeURL string, window, maxOut int) error {
	models := fmt.Sprintf(`{"default": "bench",
  "providers": {"fake": {"type": "anthropic", "base_url": %q, "api_key_env": "FAKE_API_KEY"}},
  "models": {"bench": {"provider": "fake", "id": "fake-model", "context_window": %d, "max_output_tokens": %d}}}`,
		fakeURL, window, maxOut)
	if err := os.WriteFile(filepath.Join(w.ghome, "models.json"), []byte(models), 0o600); err != nil {
		return fmt.Errorf("write models.json: %w", err)
	}
	return nil
}

// env is the environment of garuda and garuda-exec in the workspace: nothing of the caller's but PATH.
func (w *workspace) env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "GARUDA_HOME=" + w.ghome, "TMPDIR=" + w.tmp, "FAKE_API_KEY=x"}
}

// remove deletes the workspace.
func (w *workspace) remove() { os.RemoveAll(w.base) }
