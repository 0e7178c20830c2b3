// Snapshots of protected paths and what changed between two.

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSnapshotChanged(t *testing.T) {
	d := t.TempDir()
	hooks := filepath.Join(d, "hooks")
	cfg := filepath.Join(d, "config")
	missing := filepath.Join(d, "missing")
	must(t, os.Mkdir(hooks, 0o755))
	must(t, os.WriteFile(cfg, []byte("a"), 0o644))
	paths := []string{hooks, cfg, missing}
	before := SnapshotPaths(paths)
	if ch := Changed(before, SnapshotPaths(paths)); len(ch) != 0 {
		t.Fatalf("unchanged paths reported: %v", ch)
	}
	must(t, os.Mkdir(missing, 0o755))
	if ch := Changed(before, SnapshotPaths(paths)); len(ch) != 0 {
		t.Fatalf("an empty folder where nothing was reported: %v", ch)
	}
	must(t, os.Remove(missing))
	must(t, os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("x"), 0o755))
	must(t, os.WriteFile(cfg, []byte("b"), 0o644))
	must(t, os.Symlink("/etc", missing))
	if ch := Changed(before, SnapshotPaths(paths)); !slices.Equal(ch, []string{cfg, hooks, missing}) {
		t.Fatalf("Changed = %v", ch)
	}
}
