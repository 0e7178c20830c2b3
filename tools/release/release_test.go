package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testVersion is the version the tests release: not the development version the Makefile stamps by default.
const testVersion = "0.16.0"

// moduleRoot is the module's root, from this package's folder.
const moduleRoot = "../.."

var shared struct {
	once sync.Once
	dir  string // removed by TestMain
	dist string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// release builds the whole release once per test run (all five platforms; the tests share it).
func releaseOnce(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the release for five platforms; skipped with -short")
	}
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "garuda-release-test-")
		if shared.err != nil {
			return
		}
		shared.dist = filepath.Join(shared.dir, "dist")
		shared.err = buildRelease(shared.dist)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dist
}

func buildRelease(out string) error {
	var log bytes.Buffer
	err := run(options{root: moduleRoot, version: testVersion, out: out, log: &log, allowDirty: true})
	if err != nil {
		return fmt.Errorf("release: %v\n%s", err, log.String())
	}
	return nil
}

// The release passes the registry's rules and Garuda's own (the same check make release runs before it puts the
// release in place).
func TestReleaseFollowsRegistryRules(t *testing.T) {
	dist := releaseOnce(t)
	if problems := checkRelease(dist, testVersion); len(problems) > 0 {
		t.Fatalf("the release breaks the rules:\n%s", strings.Join(problems, "\n"))
	}
	want := []string{sumsFile, entryDir + "/agent.json", entryDir + "/icon.svg"}
	for _, p := range platforms {
		want = append(want, p.archive(testVersion))
	}
	got := listFiles(t, dist)
	if strings.Join(got, " ") != strings.Join(slices.Sorted(slices.Values(want)), " ") {
		t.Errorf("dist holds %v, want %v", got, slices.Sorted(slices.Values(want)))
	}
}

// The same version built twice gives the same bytes: every archive, the sums and the registry entry.
func TestReleaseReproducible(t *testing.T) {
	first := releaseOnce(t)
	second := filepath.Join(t.TempDir(), "dist")
	start := time.Now()
	if err := buildRelease(second); err != nil {
		t.Fatal(err)
	}
	t.Logf("second release (build cache warm): %v", time.Since(start).Round(time.Millisecond))
	names := listFiles(t, first)
	if got := listFiles(t, second); strings.Join(got, " ") != strings.Join(names, " ") {
		t.Fatalf("the second release holds %v, the first %v", got, names)
	}
	for _, name := range names {
		a, _ := os.ReadFile(filepath.Join(first, name))
		b, _ := os.ReadFile(filepath.Join(second, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two releases of the same version (%d and %d bytes)", name, len(a), len(b))
		}
	}
}

// Each archive holds the two binaries, built static for its platform with the version stamped in, and LICENSE and
// README.md, at the top level, in a fixed order, owned by 0:0, dated at the commit.
func TestReleaseArchives(t *testing.T) {
	dist := releaseOnce(t)
	mtime, err := commitTime(moduleRoot)
	if err != nil {
		t.Fatal(err)
	}
	license, _ := os.ReadFile(filepath.Join(moduleRoot, "LICENSE"))
	readme, _ := os.ReadFile(filepath.Join(moduleRoot, "README.md"))
	if !bytes.HasPrefix(bytes.TrimSpace(license), []byte("Apache License\n                           Version 2.0, January 2004")) {
		t.Errorf("LICENSE is not the Apache License 2.0")
	}
	for _, p := range platforms {
		t.Run(p.name, func(t *testing.T) {
			files := readArchive(t, filepath.Join(dist, p.archive(testVersion)), mtime)
			wantNames := []string{p.exe("garuda"), p.exe("garuda-exec"), "LICENSE", "README.md"}
			var names []string
			for _, f := range files {
				names = append(names, f.name)
			}
			if strings.Join(names, " ") != strings.Join(wantNames, " ") {
				t.Fatalf("members %v, want %v", names, wantNames)
			}
			for _, f := range files[:2] {
				if f.mode != 0o755 {
					t.Errorf("%s: mode %o, want 755", f.name, f.mode)
				}
				checkArchivedBinary(t, p, f)
			}
			for i, want := range [][]byte{license, readme} {
				f := files[2+i]
				if f.mode != 0o644 || !bytes.Equal(f.data, want) {
					t.Errorf("%s: mode %o, %d bytes; want 644 and the repository's %d bytes", f.name, f.mode, len(f.data), len(want))
				}
			}
		})
	}
}

type archived struct {
	name string
	mode int64
	data []byte
}

// readArchive reads a .tar.gz or .zip and checks what makes it reproducible.
func readArchive(t *testing.T, path string, mtime time.Time) []archived {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var files []archived
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			if !f.Modified.Equal(mtime) {
				t.Errorf("%s: time %v, want the commit's %v", f.Name, f.Modified, mtime)
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, archived{f.Name, int64(f.Mode().Perm()), b})
		}
		return files
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("gzip header names %q at %v; want no name and no time", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(mtime) {
			t.Errorf("%s: type %c, owner %d:%d (%q:%q), time %v; want a regular file of 0:0, no names, at %v",
				h.Name, h.Typeflag, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, mtime)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, archived{h.Name, h.Mode, b})
	}
	return files
}

// checkArchivedBinary checks that a binary is for p, static, built with the shipped settings and stamped with the version.
func checkArchivedBinary(t *testing.T, p platform, f archived) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(f.data))
	if err != nil {
		t.Fatalf("%s: %v", f.name, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": p.goos, "GOARCH": p.goarch, "CGO_ENABLED": "0", "-trimpath": "true", "-tags": "grpcnotrace"} {
		if settings[k] != want {
			t.Errorf("%s: %s=%q, want %q", f.name, k, settings[k], want)
		}
	}
	for _, pkg := range []string{"frontend/cli", "broker"} {
		if want := module + "/" + pkg + ".Version=" + testVersion; !strings.Contains(settings["-ldflags"], want) {
			t.Errorf("%s: -ldflags %q lack %s", f.name, settings["-ldflags"], want)
		}
	}
	r := bytes.NewReader(f.data)
	switch p.goos {
	case "linux":
		ef, err := elf.NewFile(r)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.goarch]
		if ef.Machine != want {
			t.Errorf("%s: ELF machine %v, want %v", f.name, ef.Machine, want)
		}
		for _, prog := range ef.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("%s: dynamically linked (%v)", f.name, prog.Type)
			}
		}
	case "darwin":
		mf, err := macho.NewFile(r)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.goarch]
		if mf.Cpu != want {
			t.Errorf("%s: Mach-O CPU %v, want %v", f.name, mf.Cpu, want)
		}
	case "windows":
		pf, err := pe.NewFile(r)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if pf.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
			t.Errorf("%s: PE machine %#x, want AMD64", f.name, pf.Machine)
		}
	}
}

// listFiles lists the regular files under dir, slash-separated and sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(slices.Values(names))
}
