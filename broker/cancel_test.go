package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/internal/testproc"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// The grace the API states (execv1.CancelGrace, which front ends wait on) is the one the sandbox gives a cancelled
// command.
func TestCancelGraceIsTheAPIs(t *testing.T) {
	if sandbox.TermGrace != execv1.CancelGrace {
		t.Errorf("sandbox.TermGrace %v, the API's CancelGrace %v", sandbox.TermGrace, execv1.CancelGrace)
	}
}

// startSleeper starts a command that ignores SIGTERM (so it lives through the broker's 2 s grace) and waits until
// it runs.
func startSleeper(t *testing.T, c execv1.ExecServiceClient, cx context.Context, sid, marker string) execv1.ExecService_CallClient {
	t.Helper()
	st := brokertest.Start(t, c, cx, sid, brokertest.Bash("trap '' TERM; sleep "+marker+" & wait; wait"))
	deadline := time.Now().Add(20 * time.Second)
	for len(testproc.Holding("sleep "+marker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return st
}

// A Cancel message ends the command's whole process tree, and only then does the broker answer with the Result:
// when the front end has it, nothing of the call runs. Control: ending the stream (the other way to cancel) answers
// at once, while the command that ignores SIGTERM still runs.
func TestCancelMessageAnswersOnceTheCommandIsGone(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)

	marker := "61.7301"
	st := startSleeper(t, c, brokertest.Ctx(t), sid, marker)
	if err := st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Cancel{Cancel: &execv1.Cancel{}}}); err != nil {
		t.Fatal(err)
	}
	m, err := brokertest.Next(t, st)
	if err != nil {
		t.Fatalf("after a cancel the broker still answers with a result: %v", err)
	}
	if r := m.GetResult(); r.GetStatus() != execv1.Status_STATUS_CANCELLED {
		t.Errorf("result %v, want cancelled", r)
	}
	if left := testproc.Holding("sleep " + marker); len(left) > 0 {
		t.Errorf("the result came while the command still ran: %v", left)
	}

	marker = "61.7302"
	cx, cancel := context.WithCancel(brokertest.Ctx(t))
	st = startSleeper(t, c, cx, sid, marker)
	cancel()
	if _, err := brokertest.Next(t, st); err == nil {
		t.Fatal("control: a cancelled stream still answered")
	}
	if len(testproc.Holding("sleep "+marker)) == 0 {
		t.Skip("control: the command was gone at once; the check above shows nothing here")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(testproc.Holding("sleep "+marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the command outlived its cancelled stream: %v", testproc.Holding("sleep "+marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Cancel while a question is open denies it (nothing is written), the answer that follows is ignored, not a
// protocol error, and the Result says cancelled.
func TestCancelMessageDuringAQuestion(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	st := brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("cancelled.txt", "x"))
	m, err := brokertest.Next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question, got %v %v", m, err)
	}
	if err := st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Cancel{Cancel: &execv1.Cancel{}}}); err != nil {
		t.Fatal(err)
	}
	if err := brokertest.Answer(st, m.GetQuestion().GetQuestionId(), execv1.Choice_CHOICE_ONCE); err != nil {
		t.Fatal(err)
	}
	m, err = brokertest.Next(t, st)
	if err != nil {
		t.Fatalf("after a cancel the broker still answers with a result: %v", err)
	}
	if r := m.GetResult(); r.GetStatus() != execv1.Status_STATUS_CANCELLED {
		t.Errorf("result %v, want cancelled", r)
	}
	if _, err := os.Stat(filepath.Join(e.Root, "cancelled.txt")); !os.IsNotExist(err) {
		t.Error("the write went ahead after its cancel")
	}
	// Control: the same write answered "once" without a cancel is written.
	if res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("kept.txt", "x")),
		execv1.Choice_CHOICE_ONCE); err != nil ||
		res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("control write: %v %v", res, err)
	}
}
