package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A client that closes its side while a question is open cannot answer any more: the question denies at once.
func TestHangUpDeniesOpenQuestion(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	st := brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("hung.txt", "x"))
	m, err := brokertest.Next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question: %v %v", m, err)
	}
	st.CloseSend()
	m, err = brokertest.Next(t, st)
	if err != nil || m.GetResult().GetStatus() != execv1.Status_STATUS_DENIED {
		t.Fatalf("after hang-up: %v %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(e.Root, "hung.txt")); err == nil {
		t.Fatal("written after the client hung up")
	}
}

// What was shown is what is written: a file changed after the question is not overwritten on "allow".
func TestFileChangedAfterQuestion(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	path := filepath.Join(e.Root, "a.txt")
	os.WriteFile(path, []byte("before\n"), 0o644)
	st := brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("a.txt", "garuda's\n"))
	m, err := brokertest.Next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question: %v %v", m, err)
	}
	if d := m.GetQuestion().GetDiff(); d.GetOldText() != "before\n" || d.GetNewText() != "garuda's\n" {
		t.Fatalf("the question's diff is not the change: %+v", d)
	}
	os.WriteFile(path, []byte("the user's edit\n"), 0o644)
	brokertest.Answer(st, m.GetQuestion().QuestionId, execv1.Choice_CHOICE_ONCE)
	m, err = brokertest.Next(t, st)
	if err != nil || m.GetResult().GetStatus() != execv1.Status_STATUS_FAILED ||
		!strings.Contains(m.GetResult().Content, "changed since the question") {
		t.Fatalf("allow after a change: %v %v", m, err)
	}
	if data, _ := os.ReadFile(path); string(data) != "the user's edit\n" {
		t.Fatalf("the user's edit was overwritten: %q", data)
	}
	// Negative control: unchanged, the same answer writes exactly the previewed bytes.
	res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("a.txt", "garuda's\n")),
		execv1.Choice_CHOICE_ONCE)
	if data, _ := os.ReadFile(path); res.GetStatus() != execv1.Status_STATUS_COMPLETED || string(data) != "garuda's\n" {
		t.Fatalf("control: %v %q", res, data)
	}
}
