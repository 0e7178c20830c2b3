package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BigProject fills root with 20,000 files in 1,000 folders, a git repository at its top and two nested ones: the
// project of the benchmarks that show what a large tree costs a command or a first prompt.
func BigProject(tb testing.TB, root string) {
	tb.Helper()
	git := NeedCommand(tb, "git", "git")
	for i := range 50 {
		for j := range 20 {
			d := filepath.Join(root, fmt.Sprintf("pkg%02d", i), fmt.Sprintf("sub%02d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
			for k := range 20 {
				os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d.go", k)), nil, 0o644)
			}
		}
	}
	for _, d := range []string{".", "pkg01/sub01", "pkg02"} {
		cmd := exec.Command(git, "init", "-q", d)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git init: %v %s", err, out)
		}
	}
}
