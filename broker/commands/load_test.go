package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/garuda-dev/garuda/broker/conffile"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s), Mode: 0o644} }

func symlink(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
}

func mustLoad(t *testing.T, project, user fs.FS) *Set {
	t.Helper()
	s, err := Load(project, user)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

func names(cs []Command) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func find(t *testing.T, s *Set, name string) Command {
	t.Helper()
	for _, c := range s.List() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("command %q not listed; have %v; warnings %q", name, names(s.List()), s.Warnings())
	return Command{}
}

func hasWarning(s *Set, parts ...string) bool {
	for _, w := range s.Warnings() {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return true
		}
	}
	return false
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The places commands and skills come from, their names, sources, display paths and hashes.
func TestLoadPlacesAndNames(t *testing.T) {
	hello := "---\ndescription: Say hello\nargument-hint: <who>\nmodel: small\nallowed-tools: Bash(git status:*)\n---\nHello $ARGUMENTS\n"
	project := fstest.MapFS{
		".garuda/commands/hello.md":         file(hello),
		".claude/commands/a/b.md":           file("---\ndescription: nested\n---\nB body"),
		".claude/commands/a/c/d.md":         file("deep"),
		".claude/commands/notes.txt":        file("not a command"),
		".claude/commands/.hidden.md":       file("hidden"),
		".garuda/skills/lint/SKILL.md":      file("---\nname: lint\ndescription: Lints things\n---\nRun the linter."),
		".claude/skills/pdf/SKILL.md":       file("---\nname: pdf\ndescription: PDFs\n---\nPDF body"),
		".agents/skills/web-dev/SKILL.md":   file("---\nname: web-dev\ndescription: Web\n---\nWeb body"),
		".agents/skills/web-dev/scripts/x":  file("#!/bin/sh"),
		".claude/skills/lonely/README.md":   file("no SKILL.md"),
		"src/main.go":                       file("package main"),
		".garuda/commands/sub/readme":       file("x"),
		".claude/commands/a/b.md.bak":       file("backup"),
		".claude/commands/with space.md":    file("bad name"),
		".claude/commands/unicodé.md":       file("bad name"),
		".claude/commands/a:b.md":           file("colon in file name"),
		".garuda/commands/sub/.git/x.md":    file("hidden folder"),
		".claude/skills/pdf/reference.md":   file("ref"),
		".claude/skills/pdf/scripts/run.sh": file("echo"),
	}
	user := fstest.MapFS{
		"commands/mine.md":          file("---\ndescription: user cmd\n---\nMine"),
		"skills/notes/SKILL.md":     file("---\nname: notes\ndescription: Notes\n---\nNotes body"),
		"credentials":               file("secret"),
		"commands/team/deploy.md":   file("Deploy $1 to $2"),
		"skills/notes/examples.txt": file("x"),
	}
	s := mustLoad(t, project, user)

	want := []string{"a:b", "a:c:d", "hello", "lint", "mine", "notes", "pdf", "team:deploy", "web-dev"}
	if got := names(s.List()); !slices.Equal(got, want) {
		t.Fatalf("List() = %v, want %v; warnings %q", got, want, s.Warnings())
	}
	if got := names(s.Skills()); !slices.Equal(got, []string{"lint", "notes", "pdf", "web-dev"}) {
		t.Fatalf("Skills() = %v", got)
	}

	h := find(t, s, "hello")
	wantHello := Command{Name: "hello", Description: "Say hello", ArgumentHint: "<who>", Model: "small",
		AllowedTools: "Bash(git status:*)", Body: "Hello $ARGUMENTS", Source: SourceProject,
		Path: ".garuda/commands/hello.md", Hash: sha(hello)}
	if h != wantHello {
		t.Fatalf("hello = %+v\nwant    %+v", h, wantHello)
	}
	cases := []struct{ name, path, source string }{
		{"a:b", ".claude/commands/a/b.md", SourceProject},
		{"a:c:d", ".claude/commands/a/c/d.md", SourceProject},
		{"mine", "$GARUDA_HOME/commands/mine.md", SourceUser},
		{"team:deploy", "$GARUDA_HOME/commands/team/deploy.md", SourceUser},
		{"lint", ".garuda/skills/lint/SKILL.md", SourceProject},
		{"pdf", ".claude/skills/pdf/SKILL.md", SourceProject},
		{"web-dev", ".agents/skills/web-dev/SKILL.md", SourceProject},
		{"notes", "$GARUDA_HOME/skills/notes/SKILL.md", SourceUser},
	}
	for _, c := range cases {
		got := find(t, s, c.name)
		if got.Path != c.path || got.Source != c.source {
			t.Errorf("%s: path %q source %q, want %q %q", c.name, got.Path, got.Source, c.path, c.source)
		}
		if got.Skill != strings.HasSuffix(c.path, "SKILL.md") {
			t.Errorf("%s: Skill = %v", c.name, got.Skill)
		}
	}
	sk, ok := s.Skill("pdf")
	if !ok || sk.Body != "PDF body" || sk.Description != "PDFs" {
		t.Fatalf("Skill(pdf) = %+v, %v", sk, ok)
	}
	if _, ok := s.Skill("hello"); ok {
		t.Fatal("Skill(hello) found a command")
	}
	for _, w := range []string{"with space.md", "unicodé.md", "a:b.md"} {
		if !hasWarning(s, w, "not a valid command name") {
			t.Errorf("no warning for %q: %q", w, s.Warnings())
		}
	}
	if !hasWarning(s, ".claude/skills/lonely", "no SKILL.md") {
		t.Errorf("no warning for a skill folder without SKILL.md: %q", s.Warnings())
	}
}

func TestLoadNilAndEmpty(t *testing.T) {
	s := mustLoad(t, nil, nil)
	if len(s.List()) != 0 || len(s.Warnings()) != 0 {
		t.Fatalf("empty Load: %v %q", s.List(), s.Warnings())
	}
	s = mustLoad(t, fstest.MapFS{"README.md": file("x")}, fstest.MapFS{})
	if len(s.List()) != 0 || len(s.Warnings()) != 0 {
		t.Fatalf("no command folders: %v %q", s.List(), s.Warnings())
	}
}

// On a name clash the first place wins: the user's own over the project's, .garuda over .claude, commands
// over skills; a project cannot take a built-in's name, the user can.
func TestLoadPrecedence(t *testing.T) {
	project := fstest.MapFS{
		".garuda/commands/x.md":          file("garuda x"),
		".claude/commands/x.md":          file("claude x"),
		".claude/commands/mine.md":       file("project mine"),
		".claude/commands/undo.md":       file("project undo"),
		".claude/commands/help.md":       file("project help"),
		".garuda/skills/x/SKILL.md":      file("---\nname: x\ndescription: d\n---\nskill x"),
		".claude/skills/sk/SKILL.md":     file("---\nname: sk\ndescription: d\n---\nclaude sk"),
		".agents/skills/sk/SKILL.md":     file("---\nname: sk\ndescription: d\n---\nagents sk"),
		".agents/skills/notes/SKILL.md":  file("---\nname: notes\ndescription: d\n---\nproject notes"),
		".claude/commands/team/ship.md":  file("project ship"),
		".garuda/commands/review.md":     file("project review"),
		".garuda/commands/reviewing.md":  file("fine"),
		".claude/commands/init.md":       file("project init"),
		".claude/skills/status/SKILL.md": file("---\nname: status\ndescription: d\n---\nproject status skill"),
	}
	user := fstest.MapFS{
		"commands/mine.md":      file("user mine"),
		"commands/review.md":    file("user review"),
		"skills/notes/SKILL.md": file("---\nname: notes\ndescription: d\n---\nuser notes"),
	}
	s := mustLoad(t, project, user)
	cases := []struct{ name, body, warnPath string }{
		{"x", "garuda x", ".claude/commands/x.md"},
		{"mine", "user mine", ".claude/commands/mine.md"},
		{"sk", "claude sk", ".agents/skills/sk/SKILL.md"},
		{"notes", "user notes", ".agents/skills/notes/SKILL.md"},
		{"review", "user review", ".garuda/commands/review.md"},
	}
	for _, c := range cases {
		got := find(t, s, c.name)
		if got.Body != c.body {
			t.Errorf("/%s body %q, want %q", c.name, got.Body, c.body)
		}
		if !hasWarning(s, c.warnPath, "already defined by") {
			t.Errorf("/%s: no warning naming %s: %q", c.name, c.warnPath, s.Warnings())
		}
	}
	if c := find(t, s, "x"); c.Skill {
		t.Error("the skill x replaced the command x")
	}
	for _, b := range []string{"undo", "help", "status"} {
		if r := s.Resolve("/" + b); r.Kind != KindMessage || r.Command != nil {
			t.Errorf("/%s resolved to a project file: %+v", b, r)
		}
		if !hasWarning(s, "/"+b+" is a built-in command") {
			t.Errorf("no warning for the project's /%s: %q", b, s.Warnings())
		}
	}
	// Controls: a project name that is not a built-in is taken, and so is /init, a prompt in the terminal too.
	find(t, s, "reviewing")
	if r := s.Resolve("/init"); r.Kind != KindPrompt || r.Prompt != "project init" {
		t.Errorf("/init = %+v, want the project's prompt", r)
	}
}

// Only real folders and regular files are read: symbolic links and special files are skipped with a warning.
func TestLoadSkipsLinksAndSpecialFiles(t *testing.T) {
	project := fstest.MapFS{
		"elsewhere/evil.md":                   file("linked body"),
		"elsewhere/skill/SKILL.md":            file("---\nname: linked\ndescription: d\n---\nx"),
		".claude/commands/real.md":            file("linked body"), // control: the same bytes as a regular file load
		".claude/commands/link.md":            symlink("../../elsewhere/evil.md"),
		".claude/commands/linkdir":            symlink("../../elsewhere"),
		".claude/commands/fifo.md":            &fstest.MapFile{Mode: fs.ModeNamedPipe | 0o644},
		".claude/commands/dev.md":             &fstest.MapFile{Mode: fs.ModeDevice | 0o644},
		".claude/skills/linked":               symlink("../../elsewhere/skill"),
		".claude/skills/lnk/SKILL.md":         symlink("../../../elsewhere/skill/SKILL.md"),
		".garuda":                             symlink("elsewhere"),
		".agents/skills/ok/SKILL.md":          file("---\nname: ok\ndescription: d\n---\nok"),
		"elsewhere/commands/viaparent.md":     file("x"),
		"elsewhere/skills/viaparent/SKILL.md": file("---\nname: viaparent\ndescription: d\n---\nx"),
	}
	s := mustLoad(t, project, nil)
	if got := names(s.List()); !slices.Equal(got, []string{"ok", "real"}) {
		t.Fatalf("List() = %v, want only the regular files; warnings %q", got, s.Warnings())
	}
	for _, p := range []string{"link.md", "linkdir", "fifo.md", "dev.md", ".claude/skills/linked", "lnk/SKILL.md",
		".garuda is a symbolic link"} {
		if !hasWarning(s, p) {
			t.Errorf("no warning for %s: %q", p, s.Warnings())
		}
	}
}

// The same on the real file systems the broker passes (os.Root for the project, os.DirFS for the home), with a
// real FIFO: listing it must not block (opening it would wait for a writer forever, so there is no negative
// control that runs here).
func TestLoadRealFS(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	outside := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, ".claude/commands/ok.md"), "---\ndescription: ok\n---\nbody")
	write(filepath.Join(outside, "secret.md"), "outside body")
	write(filepath.Join(home, "commands/u.md"), "user body")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, ".claude/commands/out.md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ".claude/commands/pipe.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := mustLoad(t, root.FS(), os.DirFS(home))
	if got := names(s.List()); !slices.Equal(got, []string{"ok", "u"}) {
		t.Fatalf("List() = %v; warnings %q", got, s.Warnings())
	}
	if !hasWarning(s, "out.md", "symbolic link") || !hasWarning(s, "pipe.md", "not a regular file") {
		t.Fatalf("warnings %q", s.Warnings())
	}
	if find(t, s, "u").Path != "$GARUDA_HOME/commands/u.md" {
		t.Fatal("user path not shown under $GARUDA_HOME")
	}
}

// A command, skill or agent file listed as a regular file and swapped for a symbolic link before it is read is not
// read: the package skips links, and the read itself follows none (broker/conffile). Negative control: through
// os.Root's file system, which the broker passed before, the same swap reads the file the link names (here one of the
// project's own files, which a read rule may hide; os.Root refuses only a link out of the folder).
func TestLoadReadsNoLinkSwappedInAfterListing(t *testing.T) {
	dir := t.TempDir()
	for p, body := range map[string]string{
		"secret.md": "---\ndescription: x\n---\nSECRET", ".claude/commands/ok.md": "ok",
		".claude/skills/s/real.md": "---\nname: s\ndescription: d\n---\nSECRET", ".claude/agents/ok.md": "ok",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{
		".claude/commands/swapped.md": "../../secret.md", ".claude/agents/swapped.md": "../../secret.md",
		".claude/skills/s/SKILL.md": "real.md",
	} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	leaked := func(s *Set) bool {
		for _, c := range s.List() {
			if strings.Contains(c.Body, "SECRET") {
				return true
			}
		}
		for _, c := range s.agents {
			if strings.Contains(c.Body, "SECRET") {
				return true
			}
		}
		return false
	}
	d, err := conffile.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fsys, err := d.FS()
	if err != nil {
		t.Fatal(err)
	}
	s := mustLoad(t, listedBeforeSwap{fsys}, nil)
	if leaked(s) || !hasWarning(s, "swapped.md", "symbolic link") || !hasWarning(s, "SKILL.md", "symbolic link") {
		t.Errorf("through conffile: %v, warnings %q", names(s.List()), s.Warnings())
	}
	if got := names(s.List()); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("List() = %v, want the regular command only", got)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !leaked(mustLoad(t, listedBeforeSwap{r.FS()}, nil)) {
		t.Error("control: os.Root's file system did not follow the swapped-in link")
	}
}

// listedBeforeSwap lists every symbolic link as the regular file it was when listed, as a swap between the listing
// and the read makes it; reads go to the file system it wraps.
type listedBeforeSwap struct{ fs.FS }

func (l listedBeforeSwap) Open(name string) (fs.File, error) {
	f, err := l.FS.Open(name)
	if d, ok := f.(fs.ReadDirFile); ok && err == nil {
		return swappedDir{d}, nil
	}
	return f, err
}

func (l listedBeforeSwap) Lstat(name string) (fs.FileInfo, error) {
	fi, err := fs.Lstat(l.FS, name)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fs.Stat(l.FS, name)
	}
	return fi, err
}

func (l listedBeforeSwap) ReadConfig(name string, max int64) ([]byte, error) {
	return conffile.ReadFS(l.FS, name, max)
}

type swappedDir struct{ fs.ReadDirFile }

func (d swappedDir) ReadDir(n int) ([]fs.DirEntry, error) {
	ents, err := d.ReadDirFile.ReadDir(n)
	for i, e := range ents {
		if e.Type()&fs.ModeSymlink != 0 {
			ents[i] = regularEntry{e}
		}
	}
	return ents, err
}

type regularEntry struct{ fs.DirEntry }

func (regularEntry) Type() fs.FileMode { return 0 }
func (regularEntry) IsDir() bool       { return false }

func TestLoadLimits(t *testing.T) {
	big := strings.Repeat("x", MaxFileSize)
	project := fstest.MapFS{
		".claude/commands/max.md":             file(big),
		".claude/commands/over.md":            file(big + "y"),
		".claude/commands/a/b/c/d.md":         file("three levels of namespace"),
		".claude/commands/a/b/c/e/toodeep.md": file("four levels"),
	}
	s := mustLoad(t, project, nil)
	if got := names(s.List()); !slices.Equal(got, []string{"a:b:c:d", "max"}) {
		t.Fatalf("List() = %v; warnings %q", got, s.Warnings())
	}
	if !hasWarning(s, "over.md", "larger than 256 KiB") || !hasWarning(s, "a/b/c/e", "deeper") {
		t.Fatalf("warnings %q", s.Warnings())
	}

	many := fstest.MapFS{}
	for i := range MaxCommands + 5 {
		many[fmt.Sprintf(".claude/commands/c%04d.md", i)] = file("x")
	}
	s = mustLoad(t, many, nil)
	if n := len(s.List()); n != MaxCommands {
		t.Fatalf("%d commands loaded, want the cap %d", n, MaxCommands)
	}
	if !hasWarning(s, fmt.Sprintf("more than %d commands", MaxCommands)) {
		t.Fatalf("no warning for the cap: %q", s.Warnings())
	}

	crowded := fstest.MapFS{}
	for i := range MaxEntriesInDir + 1 {
		crowded[fmt.Sprintf(".claude/skills/s%04d", i)] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	}
	s = mustLoad(t, crowded, nil)
	if !hasWarning(s, fmt.Sprintf("more than %d entries", MaxEntriesInDir)) {
		t.Fatalf("no warning for a crowded folder: %d warnings", len(s.Warnings()))
	}
}

// A malformed frontmatter lists the command anyway, with a warning that says where and what.
func TestMalformedFrontmatterListedWithWarning(t *testing.T) {
	cases := []struct {
		name, src, warn, desc, body string
	}{
		{"unterminated", "---\ndescription: \"Say hi\nargument-hint: <x>\n---\nHi",
			"malformed frontmatter (line 2: description: unterminated quote); listed without a description", "", "Hi"},
		{"nokey", "---\ndescription: ok\nthis is not yaml\n---\nBody", "malformed frontmatter (line 3: expected key: value)", "ok", "Body"},
		{"unclosed", "---\ndescription: x\nBody",
			"malformed frontmatter (line 1: no closing --- line); listed without a description", "", "---\ndescription: x\nBody"},
		{"two", "---\n: x\n- y\n---\nB", "malformed frontmatter (line 2: expected key: value; and 1 more); listed without " +
			"a description", "", "B"},
		{"listdesc", "---\ndescription:\n  - a\n---\nB", "description is a list, expected text", "", "B"},
	}
	project := fstest.MapFS{}
	for _, c := range cases {
		project[".claude/commands/"+c.name+".md"] = file(c.src)
	}
	s := mustLoad(t, project, nil)
	for _, c := range cases {
		got := find(t, s, c.name)
		if got.Description != c.desc || got.Body != c.body {
			t.Errorf("%s: description %q body %q, want %q %q", c.name, got.Description, got.Body, c.desc, c.body)
		}
		if !strings.Contains(got.Warning, c.warn) {
			t.Errorf("%s: Warning %q, want it to contain %q", c.name, got.Warning, c.warn)
		}
		want := "Garuda: .claude/commands/" + c.name + ".md: " + got.Warning
		if !slices.Contains(s.Warnings(), want) {
			t.Errorf("%s: Warnings() %q lacks %q", c.name, s.Warnings(), want)
		}
	}
}

// Agent Skills rules: name 1-64 of [a-z0-9-], equal to the folder's name, description required.
func TestSkillRules(t *testing.T) {
	sk := func(name, desc string) *fstest.MapFile {
		return file("---\nname: " + name + "\ndescription: " + desc + "\n---\nbody")
	}
	project := fstest.MapFS{
		".claude/skills/good/SKILL.md":                            sk("good", "fine"),
		".claude/skills/other/SKILL.md":                           sk("mismatch", "d"),
		".claude/skills/Upper/SKILL.md":                           sk("Upper", "d"),
		".claude/skills/bad--x/SKILL.md":                          sk("bad--x", "d"),
		".claude/skills/-lead/SKILL.md":                           sk("-lead", "d"),
		".claude/skills/nodesc/SKILL.md":                          file("---\nname: nodesc\n---\nbody"),
		".claude/skills/noname/SKILL.md":                          file("---\ndescription: d\n---\nbody"),
		".claude/skills/nofm/SKILL.md":                            file("just a body"),
		".claude/skills/ab/SKILL.md":                              sk("a_b", "d"),
		".claude/skills/" + strings.Repeat("a", 65) + "/SKILL.md": sk(strings.Repeat("a", 65), "d"),
		".claude/skills/" + strings.Repeat("b", 64) + "/SKILL.md": sk(strings.Repeat("b", 64), "d"),
	}
	s := mustLoad(t, project, nil)
	want := []string{"b" + strings.Repeat("b", 63), "good", "nodesc", "nofm", "noname"}
	if got := names(s.Skills()); !slices.Equal(got, want) {
		t.Fatalf("Skills() = %v, want %v; warnings %q", got, want, s.Warnings())
	}
	checks := []struct{ path, warn string }{
		{"other/SKILL.md", `name "mismatch" differs from its folder "other"; skipped`},
		{".claude/skills/Upper", "not a valid skill name"},
		{".claude/skills/bad--x", "not a valid skill name"},
		{"ab/SKILL.md", `name "a_b" is not a valid skill name`},
		{".claude/skills/" + strings.Repeat("a", 65), "not a valid skill name"},
		{"nodesc/SKILL.md", "listed without a description"},
		{"noname/SKILL.md", "no name; the folder's name is used"},
	}
	for _, c := range checks {
		if !hasWarning(s, c.path, c.warn) {
			t.Errorf("no warning %q for %s: %q", c.warn, c.path, s.Warnings())
		}
	}
	if hasWarning(s, "good/SKILL.md") {
		t.Errorf("a good skill has a warning: %q", s.Warnings())
	}
}

// A folder that exists but cannot be read is Load's error; what could be read is still returned.
func TestLoadUnreadableFolder(t *testing.T) {
	project := failFS{fstest.MapFS{
		".claude/commands/x.md": file("x"),
		".garuda/commands/y.md": file("y"),
	}, ".claude/commands"}
	s, err := Load(project, nil)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), ".claude/commands") {
		t.Fatalf("Load error = %v, want a permission error naming .claude/commands", err)
	}
	if s == nil || !slices.Equal(names(s.List()), []string{"y"}) {
		t.Fatalf("Set = %v", s)
	}
}

type failFS struct {
	fstest.MapFS
	bad string
}

func (f failFS) Open(name string) (fs.File, error) {
	if name == f.bad {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f.MapFS.Open(name)
}

// Hidden, control and bidirectional characters never reach the menu's description fields.
func TestHiddenCharactersRemoved(t *testing.T) {
	project := fstest.MapFS{
		".claude/commands/x.md": file("---\ndescription: \"safe\u202e txt.exe\u200b\\x\"\nargument-hint: a\u0007b\n---\nbody"),
		".claude/commands/y.md": file("---\ndescription: plain\n---\nbody"),
	}
	s := mustLoad(t, project, nil)
	x := find(t, s, "x")
	if x.Description != "safe txt.exex" || x.ArgumentHint != "ab" {
		t.Fatalf("description %q hint %q", x.Description, x.ArgumentHint)
	}
	if !strings.Contains(x.Warning, "hidden or control characters removed") {
		t.Fatalf("warning %q", x.Warning)
	}
	if find(t, s, "y").Warning != "" {
		t.Fatal("a plain description got a warning")
	}
}

// A description is capped (project skills' descriptions reach the system prompt before any consent).
func TestLongDescriptionCapped(t *testing.T) {
	s := mustLoad(t, fstest.MapFS{
		".claude/skills/k/SKILL.md": file("---\nname: k\ndescription: " + strings.Repeat("é", 5000) + "\n---\nbody"),
		".claude/skills/j/SKILL.md": file("---\nname: j\ndescription: " + strings.Repeat("é", MaxFieldLen) + "\n---\nbody"),
	}, nil)
	k, _ := s.Skill("k")
	if n := len([]rune(k.Description)); n != MaxFieldLen || !strings.HasSuffix(k.Description, "…") ||
		!strings.Contains(k.Warning, "cut at 1024") {
		t.Fatalf("description of %d characters, warning %q", n, k.Warning)
	}
	if j, _ := s.Skill("j"); len([]rune(j.Description)) != MaxFieldLen || j.Warning != "" {
		t.Fatalf("a description at the limit was changed: %q", j.Warning)
	}
}

// The Set hands out copies: changing them changes nothing in the Set.
func TestSetHandsOutCopies(t *testing.T) {
	s := mustLoad(t, fstest.MapFS{".claude/skills/k/SKILL.md": file("---\nname: k\ndescription: d\n---\nbody")}, nil)
	s.List()[0].Body = "changed"
	s.Skills()[0].Body = "changed"
	k, _ := s.Skill("k")
	k.Body = "changed"
	r := s.Resolve("/k")
	r.Command.Body = "changed"
	if k2, _ := s.Skill("k"); k2.Body != "body" {
		t.Fatalf("Set changed through a copy: %q", k2.Body)
	}
}
