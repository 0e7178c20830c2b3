package attacks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (first pass over the boundary).
// FOUND AND FIXED. Undo writes with no question, and restoreFile (broker/rpcs.go) opens the file's folder with
// os.OpenRoot / fsops.OpenRoot, which follow symlinks in the folder's own path. A sandboxed command swaps the folder
// of a file Garuda wrote for a symlink out of the root (to a file whose content matches what Garuda wrote): undo
// then overwrites it with the pre-image, or removes it, outside the root, $GARUDA_HOME included. Control: without
// the swap, undo removes the file Garuda created.
func TestRedTeamUndoThroughSwappedFolder(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.root), "outside")
	mustWrite(t, filepath.Join(outside, "keep.txt"), "garuda-wrote\n")
	mustWrite(t, filepath.Join(outside, "pre.txt"), "garuda-wrote\n")
	mustWrite(t, filepath.Join(e.root, "sub", "pre.txt"), "user-original\n")
	// A team's policy file with a content the attacker knows (a company-wide file), in Garuda's home.
	teamPolicy := `{"permissions":{"deny":["Bash(curl *)"]}}`
	mustWrite(t, filepath.Join(e.home, "policy.json"), teamPolicy)
	c := e.client()
	sid := e.open(c)
	for _, w := range [][2]string{{"sub/keep.txt", "garuda-wrote\n"}, {"sub/pre.txt", "garuda-wrote\n"}, {"cfg/policy.json", teamPolicy}} {
		if res, _, err := run(t, start(t, c, ctx(t), sid, write(w[0], w[1])),
			execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("write %s: %v %v", w[0], res, err)
		}
	}
	sh(t, c, sid, fmt.Sprintf("mv sub sub.real && ln -s ../outside sub && mv cfg cfg.real && ln -s %s cfg", e.home))
	for range 3 {
		c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid})
	}
	if _, err := os.Stat(filepath.Join(e.home, "policy.json")); err != nil {
		t.Errorf("undo removed $GARUDA_HOME/policy.json (the team policy) through a swapped folder: %v", err)
	}
	if got := fileText(filepath.Join(outside, "pre.txt")); got != "garuda-wrote\n" {
		t.Errorf("undo wrote outside the root through a swapped folder: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep.txt")); err != nil {
		t.Errorf("undo removed a file outside the root through a swapped folder: %v", err)
	}
	// Control: without the swap, undo removes what Garuda created.
	if res, _, _ := run(t, start(t, c, ctx(t), sid, write("made.txt", "x")),
		execv1.Choice_CHOICE_ONCE); res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("control write: %v", res)
	}
	if _, err := c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid}); err != nil {
		t.Fatalf("control undo: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "made.txt")); err == nil {
		t.Fatal("control: undo did not remove the created file")
	}
}

// garuda undo restores the exact pre-image of the session's last change.
func TestUndoRestoresThePreImage(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	path := filepath.Join(e.root, "u.txt")
	pre := []byte("line one\xff\r\nline two")
	os.WriteFile(path, pre, 0o640)
	wres, _, werr := run(t, start(t, c, ctx(t), sid, write("u.txt", "replaced")), execv1.Choice_CHOICE_ONCE)
	if data, _ := os.ReadFile(path); string(data) != "replaced" {
		t.Fatalf("write: %q (%v %v)", data, wres, werr)
	}
	res, err := c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != string(pre) || res.GetRestored().GetPath() != path {
		t.Fatalf("undo left %q (%v)", data, res)
	}
	// Nothing left to undo: a clear refusal, not a silent success.
	if _, err := c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid}); err == nil {
		t.Fatal("a second undo succeeded with nothing to undo")
	}
}

// A project opened by a path through a symlink (~/code -> /data/code) can undo its changes: the snapshot names the
// file by its real path, which undo reaches without following a link.
func TestUndoInARootReachedThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := errors.Join(os.MkdirAll(real, 0o755), os.Symlink(real, link)); err != nil {
		t.Fatal(err)
	}
	e := newEnvIn(t, dir, link, filepath.Join(dir, "home"))
	c := e.client()
	sid := e.open(c)
	path := filepath.Join(real, "u.txt")
	mustWrite(t, path, "before")
	if res, _, err := run(t, start(t, c, ctx(t), sid, write("u.txt", "after")), execv1.Choice_CHOICE_ONCE); err != nil ||
		res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("write: %v %v", res, err)
	}
	res, err := c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid})
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "before" || res.GetRestored().GetPath() != path {
		t.Fatalf("undo left %q (%v)", data, res)
	}
}

// Undo decides first: the restore of a path the policy now denies writing is refused, and audited, before the file
// is looked at. Control: without the rule the same undo restores the file.
func TestUndoOfADeniedPathIsRefusedFirst(t *testing.T) {
	for _, deny := range []bool{false, true} {
		e := newEnv(t)
		c := e.client()
		sid := e.open(c)
		path := filepath.Join(e.root, "u.txt")
		os.WriteFile(path, []byte("before"), 0o644)
		if res, _, err := run(t, start(t, c, ctx(t), sid, write("u.txt", "after")),
			execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("write: %v %v", res, err)
		}
		if _, err := c.CloseSession(ctx(t), &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
			t.Fatal(err)
		}
		if deny {
			os.WriteFile(filepath.Join(e.home, "settings.json"), []byte(`{"permissions": {"deny": ["write_file(//`+path[1:]+`)"]}}`), 0o600)
		}
		_, err := c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid})
		data, _ := os.ReadFile(path)
		recs := auditRecords(t, e.home)
		last := recs[len(recs)-1]
		switch {
		case !deny && (err != nil || string(data) != "before"):
			t.Errorf("control: undo without the rule: %v, file %q", err, data)
		case deny && (err == nil || !strings.Contains(err.Error(), "denies") || string(data) != "after"):
			t.Errorf("undo of a denied path: %v, file %q", err, data)
		case deny && (last.Op != "undo" || last.Event != "decision" || last.Verdict != "deny"):
			t.Errorf("the refused undo's last record is %+v, want its deny", last)
		}
	}
}
