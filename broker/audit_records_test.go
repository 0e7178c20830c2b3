package broker_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Each call leaves its records, chained: the decision, the user's answer, the execution; a read only its decision
// and execution. No file content reaches the log.
func TestCallsLeaveTheirAuditRecords(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("w.txt", "SECRET-CONTENT")), execv1.Choice_CHOICE_ONCE)
	brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read("w.txt")), execv1.Choice_CHOICE_ONCE)
	brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("d.txt", "x")), execv1.Choice_CHOICE_DENY)
	e.Svc.Shutdown()

	var got []string
	for _, r := range brokertest.AuditRecords(t, e.Home) {
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

// A home where the audit log cannot be written (here its audit folder is a file; an unwritable $GARUDA_HOME does
// the same): the session does not open, and the one message says why and what to do, instead of a session whose
// every tool call fails with it. The control: the same broker with a writable home opens the session.
func TestSessionWithAnUnwritableAuditLogDoesNotOpen(t *testing.T) {
	for _, broken := range []bool{true, false} {
		home := t.TempDir()
		if broken {
			brokertest.MustWrite(t, filepath.Join(home, "audit"), "")
		}
		e := brokertest.NewAt(t, t.TempDir(), home)
		_, err := e.Client().OpenSession(context.Background(), &execv1.OpenSessionRequest{Root: e.Root})
		if broken && (status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "the audit log cannot be written") ||
			!strings.Contains(err.Error(), "set GARUDA_HOME")) {
			t.Errorf("unwritable audit log: %v", err)
		}
		if !broken && err != nil {
			t.Errorf("control: %v", err)
		}
	}
}
