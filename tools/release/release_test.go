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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testVersion is the version the tests release: not the development version the Makefile stamps by default, and
// a string no binary holds by chance.
const testVersion = "31.41.59"

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

// releaseOnce runs `make release VERSION=testVersion` once per test run, in a committed copy of the working tree
// (so that it passes the clean-tree check whatever the tree holds), and returns its dist folder.
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
		src := filepath.Join(shared.dir, "src")
		if shared.err = copyTree(src); shared.err != nil {
			return
		}
		shared.err = makeRelease(src, testVersion)
		shared.dist = filepath.Join(src, "dist")
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dist
}

// gitEnv runs git without the machine's or the home's configuration, as a fixed author at a fixed time.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
	"GIT_AUTHOR_DATE=2026-12-01T12:00:00Z", "GIT_COMMITTER_DATE=2026-12-01T12:00:00Z"}

func gitIn(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v\n%s", args, err, out)
	}
	return nil
}

// copyTree copies the module's tracked files, as they are in the working tree, to dst and commits them there.
func copyTree(dst string) error {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = moduleRoot
	list, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		fi, err := os.Stat(filepath.Join(moduleRoot, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		data, err := os.ReadFile(filepath.Join(moduleRoot, name))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "copy"}} {
		if err := gitIn(dst, args...); err != nil {
			return err
		}
	}
	return nil
}

// makeRelease runs make release in src, with VERSION on the command line unless version is empty.
func makeRelease(src, version string, env ...string) error {
	args := []string{"-s", "release"}
	if version != "" {
		args = append(args, "VERSION="+version)
	}
	cmd := exec.Command("make", args...)
	cmd.Dir = src
	// Not the jobserver of a make that runs these tests.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	})
	cmd.Env = append(append(cmd.Env, gitEnv...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("make %v: %v\n%s", args, err, out)
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

// The same version built twice gives the same bytes: every archive, the sums and the registry entry, though the
// second build is of another copy of the tree, in another folder, made later.
func TestReleaseReproducible(t *testing.T) {
	first := releaseOnce(t)
	src := filepath.Join(t.TempDir(), "another", "src")
	if err := copyTree(src); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := makeRelease(src, testVersion); err != nil {
		t.Fatal(err)
	}
	t.Logf("second make release (build cache warm): %v", time.Since(start).Round(time.Millisecond))
	second := filepath.Join(src, "dist")
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

// make release with no VERSION refuses and writes nothing, though the Makefile has a development VERSION of its
// own.
func TestMakeReleaseWithoutVersion(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := copyTree(src); err != nil {
		t.Fatal(err)
	}
	err := makeRelease(src, "")
	if err == nil || !strings.Contains(err.Error(), "no version given: run make release VERSION=x.y.z") {
		t.Fatalf("make release without VERSION: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, "dist")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("make release without VERSION made dist/ (%v)", err)
	}
	// VERSION from the environment is a version given.
	if err := makeRelease(src, "", "VERSION=0.16"); err == nil || !strings.Contains(err.Error(), `version "0.16" is not MAJOR.MINOR.PATCH`) {
		t.Fatalf("VERSION=0.16 make release: %v", err)
	}
}

// Each archive holds its platform's binaries (garuda and garuda-exec, and on Linux garuda-sandbox), built static for
// it with the version stamped in, and LICENSE and README.md, at the top level, in a fixed order, owned by 0:0, dated
// at the commit.
func TestReleaseArchives(t *testing.T) {
	dist := releaseOnce(t)
	mtime, err := commitTime(filepath.Dir(dist))
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
			t.Parallel()
			files := readArchive(t, filepath.Join(dist, p.archive(testVersion)), mtime)
			var wantNames []string
			for _, prog := range p.programs() {
				wantNames = append(wantNames, p.exe(prog))
			}
			progs := len(wantNames)
			if p.goos == "linux" && !slices.Contains(wantNames, "garuda-sandbox") {
				t.Errorf("%s archives %v: garuda-sandbox belongs beside garuda-exec", p.name, wantNames)
			}
			wantNames = append(wantNames, "LICENSE", "README.md")
			var names []string
			for _, f := range files {
				names = append(names, f.name)
			}
			if strings.Join(names, " ") != strings.Join(wantNames, " ") {
				t.Fatalf("members %v, want %v", names, wantNames)
			}
			for _, f := range files[:progs] {
				if f.mode != 0o755 {
					t.Errorf("%s: mode %o, want 755", f.name, f.mode)
				}
				checkArchivedBinary(t, p, f)
			}
			for i, want := range [][]byte{license, readme} {
				f := files[progs+i]
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
	eachTarMember(t, gz, func(h *tar.Header, content io.Reader) {
		if h.Typeflag != tar.TypeReg || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(mtime) {
			t.Errorf("%s: type %c, owner %d:%d (%q:%q), time %v; want a regular file of 0:0, no names, at %v",
				h.Name, h.Typeflag, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, mtime)
		}
		b, err := io.ReadAll(content)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, archived{h.Name, h.Mode, b})
	})
	return files
}

// eachTarMember calls member with each header of the tar stream r and the member's content, in archive order; a
// stream that cannot be read fails the test.
func eachTarMember(t *testing.T, r io.Reader, member func(h *tar.Header, content io.Reader)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		member(h, tr)
	}
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
	for k, want := range map[string]string{"GOOS": p.goos, "GOARCH": p.goarch, "CGO_ENABLED": "0", "-trimpath": "true",
		"-tags": "grpcnotrace"} {
		if settings[k] != want {
			t.Errorf("%s: %s=%q, want %q", f.name, k, settings[k], want)
		}
	}
	// -trimpath keeps -ldflags out of the build info; the stamped version is in the binary's strings (the process
	// tests run the host's binaries and see it).
	if !bytes.Contains(f.data, []byte(testVersion)) {
		t.Errorf("%s: the version %s is not stamped in", f.name, testVersion)
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

// The release builds every platform once, this machine's last (its packages are then often in the build cache).
func TestBuildOrder(t *testing.T) {
	order := buildOrder()
	if len(order) != len(platforms) {
		t.Fatalf("%d builds for %d platforms", len(order), len(platforms))
	}
	for _, p := range platforms {
		if n := len(slices.DeleteFunc(slices.Clone(order), func(q platform) bool { return q != p })); n != 1 {
			t.Errorf("%s built %d times", p.name, n)
		}
	}
	if last := order[len(order)-1]; last.goos != runtime.GOOS || last.goarch != runtime.GOARCH {
		t.Errorf("the last build is %s, not this machine's %s/%s", last.name, runtime.GOOS, runtime.GOARCH)
	}
}
