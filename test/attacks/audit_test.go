package attacks

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/audit"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED. "An action that cannot be audited is not done", but Setup stored the key and Undo restored the
// file first and wrote their audit record after: with the audit log failing (its folder gone, a full disk) both
// acted unaudited, and only then reported the error. Control: with the log working both act and are recorded.
func TestRedTeamSetupAndUndoActBeforeTheirRecord(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	if res, _, err := run(t, start(t, c, ctx(t), sid, write("u.txt", "garuda\n")),
		execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("write: %v %v", res, err)
	}
	if _, err := c.Setup(ctx(t), &execv1.SetupRequest{Provider: "anthropic", Model: "m1", ApiKey: "sk-ant-first", Force: true}); err != nil {
		t.Fatalf("control Setup: %v", err)
	}
	cred := filepath.Join(e.home, "credentials")
	if !strings.Contains(fileText(cred), "sk-ant-first") {
		t.Fatalf("control: Setup did not store the key: %s", fileText(cred))
	}
	if err := os.RemoveAll(filepath.Join(e.home, "audit")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Setup(ctx(t), &execv1.SetupRequest{Provider: "anthropic", Model: "m2", ApiKey: "sk-ant-second", Force: true}); err == nil {
		t.Error("Setup succeeded with the audit log gone")
	}
	if strings.Contains(fileText(cred), "sk-ant-second") {
		t.Error("Setup stored a key it could not audit")
	}
	if _, err := c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid}); err == nil {
		t.Error("Undo succeeded with the audit log gone")
	}
	if _, err := os.Stat(filepath.Join(e.root, "u.txt")); err != nil {
		t.Errorf("Undo removed u.txt without an audit record: %v", err)
	}
}

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
