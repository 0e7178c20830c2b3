package guard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchTree makes a project of 20,000 files in 1,000 folders, with a repository at its top and two nested ones.
func benchTree(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	for i := 0; i < 50; i++ {
		for j := 0; j < 20; j++ {
			d := filepath.Join(root, fmt.Sprintf("pkg%02d", i), fmt.Sprintf("sub%02d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for k := 0; k < 20; k++ {
				os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d.go", k)), nil, 0o644)
			}
		}
	}
	for _, d := range []string{".", "pkg01/sub01", "pkg02"} {
		cmd := exec.Command("git", "init", "-q", d)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Skipf("git init: %v %s", err, out)
		}
	}
	return root
}

// nodeModules adds to root a node_modules of 20,000 files in 2,000 folders (packages of 10 folders of 10 files).
func nodeModules(b *testing.B, root string) {
	b.Helper()
	for i := 0; i < 200; i++ {
		for j := 0; j < 10; j++ {
			d := filepath.Join(root, "node_modules", fmt.Sprintf("p%03d", i), fmt.Sprintf("d%d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for k := 0; k < 10; k++ {
				os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.js", k)), nil, 0o644)
			}
		}
	}
}

// BenchmarkScan20k is the walk every sandboxed command pays twice (before and after), in a session's steady state:
// the guard re-reads only the folders whose entries changed since its last scan.
func BenchmarkScan20k(b *testing.B) {
	root := benchTree(b)
	g := New(root, Options{MaxEntries: 100000})
	defer g.Close()
	if _, err := g.Scan(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.Scan(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommand20k is one command's guard, before and after, when the command created a file in one folder
// and a new nested repository.
func BenchmarkCommand20k(b *testing.B) {
	command(b, benchTree(b))
}

// command runs one command's guard per iteration in root, the command creating a file in pkg03/sub03.
func command(b *testing.B, root string) {
	g := New(root, Options{MaxEntries: 100000})
	defer g.Close()
	g.Scan()
	i := 0
	for b.Loop() {
		w, err := g.Begin()
		if err != nil {
			b.Fatal(err)
		}
		i++
		os.WriteFile(filepath.Join(root, "pkg03", "sub03", fmt.Sprintf("new%d", i)), nil, 0o644)
		if _, err := w.Check(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanCold20k is the first scan of a session (every folder read and watched), and the cost of every scan
// where inotify is not available or its queue overflowed.
func BenchmarkScanCold20k(b *testing.B) {
	scanCold(b, benchTree(b))
}

// BenchmarkScanCold20kNodeModules20k is the first scan of a session in a project of 20,000 files beside a
// node_modules of 20,000 more, walked only for what git would find there.
func BenchmarkScanCold20kNodeModules20k(b *testing.B) {
	root := benchTree(b)
	nodeModules(b, root)
	scanCold(b, root)
}

// scanCold scans root afresh, with a new guard, once per iteration.
func scanCold(b *testing.B, root string) {
	for b.Loop() {
		g := New(root, Options{MaxEntries: 100000})
		if _, err := g.Scan(); err != nil {
			b.Fatal(err)
		}
		g.Close()
	}
}

// BenchmarkCommand20kNodeModules20k is BenchmarkCommand20k beside such a node_modules.
func BenchmarkCommand20kNodeModules20k(b *testing.B) {
	root := benchTree(b)
	nodeModules(b, root)
	command(b, root)
}
