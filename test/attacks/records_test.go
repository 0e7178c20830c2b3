package attacks

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/audit"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// auditRecords reads every record of the broker's audit folder, in order.
func auditRecords(t *testing.T, home string) []audit.Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(home, "audit", "*.jsonl"))
	var out []audit.Record
	for _, f := range files {
		if _, err := audit.Verify(f); err != nil {
			t.Fatalf("the audit chain is broken: %v", err)
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r audit.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		fh.Close()
	}
	return out
}

// What was shown is what is written: a file changed after the question is not overwritten on "allow".
func TestFileChangedAfterQuestion(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	path := filepath.Join(e.root, "a.txt")
	os.WriteFile(path, []byte("before\n"), 0o644)
	st := start(t, c, ctx(t), sid, write("a.txt", "garuda's\n"))
	m, err := next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question: %v %v", m, err)
	}
	if d := m.GetQuestion().GetDiff(); d.GetOldText() != "before\n" || d.GetNewText() != "garuda's\n" {
		t.Fatalf("the question's diff is not the change: %+v", d)
	}
	os.WriteFile(path, []byte("the user's edit\n"), 0o644)
	answer(st, m.GetQuestion().QuestionId, execv1.Choice_CHOICE_ONCE)
	m, err = next(t, st)
	if err != nil || m.GetResult().GetStatus() != execv1.Status_STATUS_FAILED || !strings.Contains(m.GetResult().Content, "changed since the question") {
		t.Fatalf("allow after a change: %v %v", m, err)
	}
	if data, _ := os.ReadFile(path); string(data) != "the user's edit\n" {
		t.Fatalf("the user's edit was overwritten: %q", data)
	}
	// Negative control: unchanged, the same answer writes exactly the previewed bytes.
	res, _, _ := run(t, start(t, c, ctx(t), sid, write("a.txt", "garuda's\n")), execv1.Choice_CHOICE_ONCE)
	if data, _ := os.ReadFile(path); res.GetStatus() != execv1.Status_STATUS_COMPLETED || string(data) != "garuda's\n" {
		t.Fatalf("control: %v %q", res, data)
	}
}

// Each call leaves its records, chained: the decision, the user's answer, the execution; a read only its decision
// and execution. No file content reaches the log.
func TestCallsLeaveTheirAuditRecords(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	run(t, start(t, c, ctx(t), sid, write("w.txt", "SECRET-CONTENT")), execv1.Choice_CHOICE_ONCE)
	run(t, start(t, c, ctx(t), sid, read("w.txt")), execv1.Choice_CHOICE_ONCE)
	run(t, start(t, c, ctx(t), sid, write("d.txt", "x")), execv1.Choice_CHOICE_DENY)
	e.svc.Shutdown()

	var got []string
	for _, r := range auditRecords(t, e.home) {
		if r.Session != sid {
			continue
		}
		got = append(got, strings.Join([]string{r.Event, r.Op, r.Verdict, r.AnsweredBy, r.Status}, "/"))
		if strings.Contains(r.Input+r.Reason, "SECRET-CONTENT") {
			t.Errorf("file content in the audit log: %+v", r)
		}
	}
	want := []string{
		"decision/write_file/ask//", "answer/write_file/allow/user: once/", "execution/write_file///completed",
		"decision/read_file/allow//", "execution/read_file///completed",
		"decision/write_file/ask//", "answer/write_file/deny/user: deny/", "execution/write_file///denied",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
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
	if res, _, err := run(t, start(t, c, ctx(t), sid, write("u.txt", "after")), execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
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
		if res, _, err := run(t, start(t, c, ctx(t), sid, write("u.txt", "after")), execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
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
