package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/test/release"
)

// module is the Go module; its GitHub repository publishes the archives as the assets of the release v<version>.
const (
	module     = "github.com/garuda-dev/garuda"
	repository = "https://" + module
)

// downloadURL is where the GitHub release of exactly this version serves an archive (never .../latest/...).
func downloadURL(version, archive string) string {
	return repository + "/releases/download/v" + version + "/" + archive
}

// A platform is one build of the release, named as the ACP Registry names it.
type platform struct {
	name, goos, goarch string
}

// platforms are the builds of a release: every OS family the registry lists. Only the Linux ones work; the others
// print their version and otherwise refuse with the reason (on Windows: use WSL).
var platforms = []platform{
	{"linux-x86_64", "linux", "amd64"},
	{"linux-aarch64", "linux", "arm64"},
	{"darwin-x86_64", "darwin", "amd64"},
	{"darwin-aarch64", "darwin", "arm64"},
	{"windows-x86_64", "windows", "amd64"},
}

// buildOrder is platforms with this machine's own last: its packages, built with the same settings, are often in
// the build cache by then (make build, or the process tests building the binaries while the release test runs),
// where building it first would compile them a second time beside that other build.
func buildOrder() []platform {
	own := func(p platform) bool { return p.goos == runtime.GOOS && p.goarch == runtime.GOARCH }
	order := slices.DeleteFunc(slices.Clone(platforms), own)
	for _, p := range platforms {
		if own(p) {
			order = append(order, p)
		}
	}
	return order
}

// exe is the file name of a program on p.
func (p platform) exe(name string) string {
	if p.goos == "windows" {
		return name + ".exe"
	}
	return name
}

// programs are the binaries of p's archive, in their order there: garuda, garuda-exec and, on Linux, the sandbox's
// helper garuda-sandbox, which garuda-exec runs from beside itself (elsewhere the two mains only refuse).
func (p platform) programs() []string {
	if p.goos == "linux" {
		return []string{"garuda", "garuda-exec", "garuda-sandbox"}
	}
	return []string{"garuda", "garuda-exec"}
}

// archive is the file name of p's archive: a .zip on Windows, a .tar.gz elsewhere.
func (p platform) archive(version string) string {
	ext := ".tar.gz"
	if p.goos == "windows" {
		ext = ".zip"
	}
	return "garuda-" + version + "-" + p.name + ext
}

// sumsFile lists the SHA-256 of every archive, in the format of sha256sum.
const sumsFile = "SHA256SUMS"

type options struct {
	root    string    // the module's root
	version string    // MAJOR.MINOR.PATCH
	out     string    // the folder to write (relative to root unless absolute); a previous release there is replaced
	log     io.Writer // one line per archive
}

// Main runs the release tool with its arguments (without the program name).
func Main(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the version to release: MAJOR.MINOR.PATCH, for example 0.16.0")
	out := fs.String("out", "dist", "the folder to write, relative to -root; a previous release there is replaced")
	root := fs.String("root", ".", "the module's root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (give the version as -version, or make release VERSION=x.y.z)", fs.Arg(0))
	}
	return run(options{root: *root, version: *version, out: *out, log: stdout})
}

// run builds the release. Every check of the input comes before the first write; the release is assembled in a
// temporary folder and put in place only once it is whole and passes the registry's rules.
func run(o options) error {
	if err := checkVersion(o.version); err != nil {
		return err
	}
	root, err := filepath.Abs(o.root)
	if err != nil {
		return err
	}
	if err := checkModule(root); err != nil {
		return err
	}
	out := o.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := checkOut(root, out); err != nil {
		return err
	}
	if err := checkClean(root); err != nil {
		return err
	}
	mtime, err := commitTime(root)
	if err != nil {
		return err
	}
	var docs []member
	for _, name := range []string{"LICENSE", "README.md"} {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return fmt.Errorf("read %s for the archives: %w", name, err)
		}
		docs = append(docs, member{name: name, mode: 0o644, data: data})
	}

	work, err := os.MkdirTemp("", "garuda-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	sums := map[string]string{}
	for _, p := range buildOrder() {
		name, sum, err := buildArchive(root, work, o.version, p, mtime, docs)
		if err != nil {
			return err
		}
		sums[name] = sum
		fmt.Fprintf(o.log, "%s  %s\n", sum, name)
	}
	if err := os.WriteFile(filepath.Join(work, sumsFile), formatSums(sums), 0o644); err != nil {
		return err
	}
	if err := writeEntry(filepath.Join(work, entryDir), o.version, sums); err != nil {
		return err
	}
	if problems := checkRelease(work, o.version); len(problems) > 0 {
		return fmt.Errorf("the release breaks the registry's rules:\n  %s", strings.Join(problems, "\n  "))
	}
	if err := replace(work, out); err != nil {
		return err
	}
	fmt.Fprintf(o.log, "release %s in %s (registry entry: %s)\n", o.version, out, filepath.Join(out, entryDir))
	return nil
}

// semver is a release version: MAJOR.MINOR.PATCH without leading zeros, pre-release or build suffix (the registry
// refuses a suffix: it wants every one of the first three dot-separated parts to be a number).
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

func checkVersion(v string) error {
	switch {
	case v == "":
		return errors.New("no version given: run make release VERSION=x.y.z (for example VERSION=0.16.0)")
	case strings.HasPrefix(v, "v") && semver.MatchString(v[1:]):
		return fmt.Errorf("version %q: give it without the v (VERSION=%s); the release tag is v%s", v, v[1:], v[1:])
	case !semver.MatchString(v):
		return fmt.Errorf("version %q is not MAJOR.MINOR.PATCH (for example 0.16.0): the ACP Registry takes a plain "+
			"semantic version, without a pre-release or build suffix", v)
	}
	return nil
}

// checkModule makes sure root is this module's root.
func checkModule(root string) error {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return fmt.Errorf("%s is not the module's root: %w", root, err)
	}
	for l := range strings.Lines(string(data)) {
		if strings.TrimSpace(l) == "module "+module {
			return nil
		}
	}
	return fmt.Errorf("%s/go.mod is not module %s", root, module)
}

// checkOut refuses an output folder whose replacement would lose anything but a previous release.
func checkOut(root, out string) error {
	if rel, err := filepath.Rel(out, root); err == nil && !strings.HasPrefix(rel, "..") {
		return fmt.Errorf("the output folder %s holds the module itself", out)
	}
	fi, err := os.Stat(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("the output %s is not a folder", out)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(out, sumsFile)); err != nil {
		return fmt.Errorf("%s is not empty and holds no previous release (no %s): not replacing it", out, sumsFile)
	}
	return nil
}

// checkClean refuses a tree with uncommitted changes to tracked files: a release is the build of one commit.
func checkClean(root string) error {
	status, err := git(root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return err
	}
	if status == "" {
		return nil
	}
	lines := strings.Split(status, "\n")
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("... and %d more", len(lines)-10))
	}
	return fmt.Errorf("the tree has uncommitted changes to tracked files; a release is built from a commit: commit or "+
		"stash them first\n%s", strings.Join(lines, "\n"))
}

// commitTime is the time of HEAD: the time of every file in the archives, so that a rebuild of the same commit
// gives the same bytes.
func commitTime(root string) (time.Time, error) {
	s, err := git(root, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return time.Time{}, err
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("git log: commit time %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), root, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// buildArchive builds p's programs and packs them with docs into work/<archive>; it returns the archive's name and
// SHA-256.
func buildArchive(root, work, version string, p platform, mtime time.Time, docs []member) (name, sum string, err error) {
	bin := filepath.Join(work, ".build-"+p.name)
	defer os.RemoveAll(bin)
	var pkgs []string
	for _, prog := range p.programs() {
		pkgs = append(pkgs, "./cmd/"+prog)
	}
	cmd := release.Command(root, release.LDFlags(version), bin+string(filepath.Separator), pkgs...)
	// The same bytes from any machine: the baseline instruction set, and no GOFLAGS of the caller's (no VCS
	// stamp either: checkClean has made sure that the tree is the commit).
	cmd.Env = append(cmd.Env, "GOOS="+p.goos, "GOARCH="+p.goarch, "GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build for %s: %w\n%s", p.name, err, out)
	}
	var members []member
	for _, prog := range p.programs() {
		data, err := os.ReadFile(filepath.Join(bin, p.exe(prog)))
		if err != nil {
			return "", "", err
		}
		members = append(members, member{name: p.exe(prog), mode: 0o755, data: data})
	}
	members = append(members, docs...)
	var buf bytes.Buffer
	if p.goos == "windows" {
		err = writeZip(&buf, members, mtime)
	} else {
		err = writeTarGz(&buf, members, mtime)
	}
	if err != nil {
		return "", "", fmt.Errorf("pack %s: %w", p.name, err)
	}
	name = p.archive(version)
	if err := os.WriteFile(filepath.Join(work, name), buf.Bytes(), 0o644); err != nil {
		return "", "", err
	}
	h := sha256.Sum256(buf.Bytes())
	return name, hex.EncodeToString(h[:]), nil
}

// formatSums writes sums as sha256sum does ("<hex>  <name>"), sorted by name.
func formatSums(sums map[string]string) []byte {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&b, "%s  %s\n", sums[name], name)
	}
	return []byte(b.String())
}

// parseSums reads a SHA256SUMS file.
func parseSums(data []byte) (map[string]string, error) {
	sums := map[string]string{}
	for l := range strings.Lines(string(data)) {
		sum, name, ok := strings.Cut(strings.TrimRight(l, "\n"), "  ")
		if !ok || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("%s: bad line %q", sumsFile, l)
		}
		sums[name] = sum
	}
	return sums, nil
}

// replace puts the release assembled in work at out, in place of whatever release was there. The files are copied
// into a fresh folder beside out first, so that out is either the old release or the whole new one.
func replace(work, out string) error {
	parent, base := filepath.Split(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	if err := os.CopyFS(stage, os.DirFS(work)); err != nil {
		return fmt.Errorf("copy the release to %s: %w", parent, err)
	}
	old := ""
	if _, err := os.Stat(out); err == nil {
		old = stage + ".old"
		if err := os.Rename(out, old); err != nil {
			return err
		}
	}
	if err := os.Rename(stage, out); err != nil {
		if old != "" {
			os.Rename(old, out)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
