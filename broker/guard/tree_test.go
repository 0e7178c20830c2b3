package guard

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWalkFindsDenied: the guard's walk asks Deny of every entry, everywhere a read-deny rule reaches — in the
// folders the guard itself leaves out (protected ones, node_modules, skipped data, git's objects) too — lists what
// it denies and enters no denied or hidden folder. A repository in node_modules is the guard's with Deny as
// without (TestGuardUndoesWhatGitFindsInNodeModules). A change is found by the incremental walk as by a
// full one; new rules walk whole again.
func TestWalkFindsDenied(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", ".vscode", "node_modules/p/.git/objects", "node_modules/p/.git/refs", "data",
		".git/objects/ab", ".git/refs", "secret/x", "hidden"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, f := range []string{"a/.env", "a/main.go", ".vscode/.env", "node_modules/p/.env", "node_modules/p/.git/HEAD",
		"data/.env", ".git/HEAD", ".git/objects/ab/.env", "secret/x/.env", "hidden/.env"} {
		must(t, os.WriteFile(filepath.Join(root, f), nil, 0o644))
	}
	var asked []string
	deny := func(rel string) bool {
		asked = append(asked, rel)
		return path.Base(rel) == ".env" || rel == "secret"
	}
	o := Options{MaxEntries: 1000, Skip: []string{"data"}, Hidden: []string{"hidden"}, Deny: deny, DenyKey: "env"}
	g := New(root, o)
	defer g.Close()
	s, err := g.Scan()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".git/objects/ab/.env", ".vscode/.env", "a/.env", "data/.env", "node_modules/p/.env", "secret"}
	if !slices.Equal(s.Denied(), want) {
		t.Errorf("denied %v, want %v", s.Denied(), want)
	}
	for _, p := range asked {
		if strings.HasPrefix(p, "secret/") || strings.HasPrefix(p, "hidden/") {
			t.Errorf("the walk entered a denied or hidden folder: asked about %s", p)
		}
	}
	if _, ok := s.repos["node_modules/p/.git"]; !ok {
		t.Errorf("a repository in node_modules is not the guard's: %v", sortedKeysRepo(s))
	}
	if !slices.Contains(sortedKeysRepo(s), ".git") {
		t.Errorf("the root's repository is missing: %v", sortedKeysRepo(s))
	}

	// Incremental: a new secret deep down and a removed one, as a full walk finds them.
	must(t, os.MkdirAll(filepath.Join(root, "b", "c"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "b", "c", ".env"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(root, "node_modules", "p", "x.env"), nil, 0o644))
	must(t, os.Remove(filepath.Join(root, "a", ".env")))
	inc, err := g.Scan()
	if err != nil {
		t.Fatal(err)
	}
	full, err := New(root, o).Scan()
	if err != nil {
		t.Fatal(err)
	}
	want = []string{".git/objects/ab/.env", ".vscode/.env", "b/c/.env", "data/.env", "node_modules/p/.env", "secret"}
	if !slices.Equal(inc.Denied(), want) || !slices.Equal(full.Denied(), want) {
		t.Errorf("after the change: incremental %v, full %v, want %v", inc.Denied(), full.Denied(), want)
	}

	// Other rules: the tree is walked whole again with them.
	o.Deny, o.DenyKey = func(rel string) bool { return strings.HasSuffix(rel, ".go") }, "go"
	g.Configure(o)
	if s, _ := g.Scan(); !slices.Equal(s.Denied(), []string{"a/main.go"}) {
		t.Errorf("with other rules: %v", s.Denied())
	}
	// Control: without Deny nothing is listed, and the folders the guard leaves out are not walked.
	g.Configure(Options{MaxEntries: 1000, Skip: []string{"data"}, Hidden: []string{"hidden"}})
	if s, _ := g.Scan(); len(s.Denied()) != 0 || s.Entries >= full.Entries {
		t.Errorf("without Deny: denied %v, %d entries (%d with)", s.Denied(), s.Entries, full.Entries)
	}
}

// TestWalkLimitCountsTheDenyWalk: what the walk reads only for the read-deny rules counts toward its limit, so a
// tree too large to search for secrets is refused rather than left half searched.
func TestWalkLimitCountsTheDenyWalk(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "node_modules"), 0o755))
	for i := range 30 {
		must(t, os.WriteFile(filepath.Join(root, "node_modules", "f"+strings.Repeat("x", i)), nil, 0o644))
	}
	g := New(root, Options{MaxEntries: 20})
	defer g.Close()
	if _, err := g.Scan(); err != nil {
		t.Fatalf("control: without Deny, only node_modules' folders count: %v", err)
	}
	g.Configure(Options{MaxEntries: 20, Deny: func(string) bool { return false }, DenyKey: "k"})
	if _, err := g.Scan(); err == nil || !strings.Contains(err.Error(), "more than 20") {
		t.Errorf("with Deny, past the limit: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
