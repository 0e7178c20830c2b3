//go:build linux

package fsops

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func goSrc(b *testing.B) *Root {
	b.Helper()
	r, err := OpenRoot(filepath.Join(runtime.GOROOT(), "src"))
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { r.Close() })
	// Search everything, as ripgrep does, so the numbers compare.
	r.Limits.ListEntries = 1 << 30
	r.Limits.ListBytes = 1 << 30
	return r
}

// BenchmarkGrepGoSrc greps Go's own source tree in content mode (path:line:text for every matching line).
// Compare: rg -n PATTERN $(go env GOROOT)/src >/dev/null.
func BenchmarkGrepGoSrc(b *testing.B) {
	r := goSrc(b)
	for _, c := range []struct{ name, pat string }{
		{"literal", `ErrUnexpectedEOF`},
		{"close-method", `func \(\w+ \*\w+\) Close\(`},
		{"error-word", `[A-Z][a-z]+Error\b`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				res, err := r.grep(context.Background(), GrepRequest{Pattern: c.pat, OutputMode: "content"}, nil)
				if err != nil {
					b.Fatal(err)
				}
				n = res.Count
			}
			b.ReportMetric(float64(n), "lines")
		})
	}
}

// BenchmarkGlobGoSrc lists the Go files of Go's source tree, newest first. Compare: rg --files -g '*.go'.
func BenchmarkGlobGoSrc(b *testing.B) {
	r := goSrc(b)
	var n int
	for b.Loop() {
		res, err := r.glob(context.Background(), "**/*.go", "", nil)
		if err != nil {
			b.Fatal(err)
		}
		n = res.Count
	}
	b.ReportMetric(float64(n), "files")
}

// BenchmarkRead1MB reads a 1 MB text file of 80-character lines (the first 2000 lines are returned).
func BenchmarkRead1MB(b *testing.B) {
	dir := b.TempDir()
	line := strings.Repeat("x", 79) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(strings.Repeat(line, (1<<20)/80)), 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		if _, err := r.read(context.Background(), ReadRequest{Path: "a.txt"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead1MBWhole reads all of a 1 MB file of 80-character lines (13107 lines, under the byte cap would
// not hold: the cap is raised so every byte is formatted).
func BenchmarkRead1MBWhole(b *testing.B) {
	dir := b.TempDir()
	line := strings.Repeat("x", 79) + "\n"
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte(strings.Repeat(line, (1<<20)/80)), 0o644)
	r, err := OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.Limits.ReadBytes = 4 << 20
	for b.Loop() {
		if _, err := r.read(context.Background(), ReadRequest{Path: "a.txt", Limit: 1 << 20}); err != nil {
			b.Fatal(err)
		}
	}
}
