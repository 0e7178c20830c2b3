package attacks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (first pass over the boundary).
// FOUND AND FIXED. Undo writes with no question, and restoreFile (broker/rpcs.go) opens the file's folder with
// os.OpenRoot / fsops.OpenRoot, which follow symlinks in the folder's own path. A sandboxed command swaps the folder
// of a file Garuda wrote for a symlink out of the root (to a file whose content matches what Garuda wrote): undo
// then overwrites it with the pre-image, or removes it, outside the root, $GARUDA_HOME included. Control: without
// the swap, undo removes the file Garuda created.
func TestRedTeamUndoThroughSwappedFolder(t *testing.T) {
	e := brokertest.New(t)
	outside := filepath.Join(filepath.Dir(e.Root), "outside")
	brokertest.MustWrite(t, filepath.Join(outside, "keep.txt"), "garuda-wrote\n")
	brokertest.MustWrite(t, filepath.Join(outside, "pre.txt"), "garuda-wrote\n")
	brokertest.MustWrite(t, filepath.Join(e.Root, "sub", "pre.txt"), "user-original\n")
	// A team's policy file with a content the attacker knows (a company-wide file), in Garuda's home.
	teamPolicy := `{"permissions":{"deny":["Bash(curl *)"]}}`
	brokertest.MustWrite(t, filepath.Join(e.Home, "policy.json"), teamPolicy)
	c := e.Client()
	sid := e.Open(c)
	for _, w := range [][2]string{{"sub/keep.txt", "garuda-wrote\n"}, {"sub/pre.txt", "garuda-wrote\n"}, {"cfg/policy.json", teamPolicy}} {
		if res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(w[0], w[1])),
			execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("write %s: %v %v", w[0], res, err)
		}
	}
	brokertest.Sh(t, c, sid, fmt.Sprintf("mv sub sub.real && ln -s ../outside sub && mv cfg cfg.real && ln -s %s cfg", e.Home))
	for range 3 {
		c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid})
	}
	if _, err := os.Stat(filepath.Join(e.Home, "policy.json")); err != nil {
		t.Errorf("undo removed $GARUDA_HOME/policy.json (the team policy) through a swapped folder: %v", err)
	}
	if got := brokertest.FileText(filepath.Join(outside, "pre.txt")); got != "garuda-wrote\n" {
		t.Errorf("undo wrote outside the root through a swapped folder: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep.txt")); err != nil {
		t.Errorf("undo removed a file outside the root through a swapped folder: %v", err)
	}
	// Control: without the swap, undo removes what Garuda created.
	if res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("made.txt", "x")),
		execv1.Choice_CHOICE_ONCE); res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("control write: %v", res)
	}
	if _, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid}); err != nil {
		t.Fatalf("control undo: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.Root, "made.txt")); err == nil {
		t.Fatal("control: undo did not remove the created file")
	}
}

// Undo decides first: the restore of a path the policy now denies writing is refused, and audited, before the file
// is looked at. Control: without the rule the same undo restores the file.
func TestUndoOfADeniedPathIsRefusedFirst(t *testing.T) {
	for _, deny := range []bool{false, true} {
		e := brokertest.New(t)
		c := e.Client()
		sid := e.Open(c)
		path := filepath.Join(e.Root, "u.txt")
		os.WriteFile(path, []byte("before"), 0o644)
		if res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("u.txt", "after")),
			execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("write: %v %v", res, err)
		}
		if _, err := c.CloseSession(brokertest.Ctx(t), &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
			t.Fatal(err)
		}
		if deny {
			os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(`{"permissions": {"deny": ["write_file(//`+path[1:]+`)"]}}`), 0o600)
		}
		_, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid})
		data, _ := os.ReadFile(path)
		recs := brokertest.AuditRecords(t, e.Home)
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

// Found by red team (class 1). Undo compares the file with what Garuda wrote before it restores it: it reads the
// file. Of a file a read rule now hides, it was decided as a write only, so its answer (restored, or "changed
// since") told whether the hidden file had changed. It is decided as an edit now (an edit reads the file): refused
// the same either way. Control: with no rule, the two worlds answer differently.
func TestUndoOfAHiddenFileSaysNothingOfIt(t *testing.T) {
	observe := func(t *testing.T, hidden, changed bool) string {
		dir := t.TempDir()
		e := brokertest.NewIn(t, dir, filepath.Join(dir, "project"), filepath.Join(dir, "home"))
		brokertest.MustWrite(t, filepath.Join(e.Root, "notes.txt"), "before\n")
		c := e.Client()
		sid := e.Open(c)
		if res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("notes.txt", "garuda\n")),
			execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("write: %v %v", res, err)
		}
		if _, err := c.CloseSession(brokertest.Ctx(t), &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
			t.Fatal(err)
		}
		if hidden {
			e.Settings(t, `{"permissions": {"deny": ["Read(notes.txt)"]}}`)
		}
		if changed {
			brokertest.MustWrite(t, filepath.Join(e.Root, "notes.txt"), "the user's own\n")
		}
		res, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid})
		return strings.ReplaceAll(strings.ReplaceAll(fmt.Sprintf("%v %v", res.GetRestored().GetPath(), err), dir, "$DIR"), sid, "$SID")
	}
	if a, b := observe(t, true, false), observe(t, true, true); a != b {
		t.Errorf("undo of a file a read rule hides says whether it changed:\nunchanged: %s\nchanged:   %s", a, b)
	}
	if a, b := observe(t, false, false), observe(t, false, true); a == b {
		t.Errorf("control: with no rule, undo should restore one and refuse the other: %s", a)
	}
}
