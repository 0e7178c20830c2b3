package attacks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A front end cannot approve what it was never asked: an answer sent before (or instead of) the question, with a
// guessed id, ends the call and writes nothing.
func TestForgedAllow(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	target := filepath.Join(e.root, "forged.txt")

	st := start(t, c, ctx(t), sid, write("forged.txt", "pwned"))
	if err := answer(st, "guessed-id", execv1.Choice_CHOICE_ONCE); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := next(t, st)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("forged answer: %v, want InvalidArgument", err)
			}
			break
		}
		if m.GetResult() != nil {
			t.Fatalf("the call ended with a result after a forged answer: %v", m.GetResult())
		}
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a forged allow wrote the file")
	}

	// Negative control: the honest answer to the real question does write it.
	res, qs, err := run(t, start(t, c, ctx(t), sid, write("forged.txt", "fine")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 1 {
		t.Fatalf("control write: %v %v (%d questions)", res, err, len(qs))
	}
	if data, _ := os.ReadFile(target); string(data) != "fine" {
		t.Fatalf("control write left %q", data)
	}
}

// One question, one answer: a second answer to the same question is a protocol violation, and a deny stays a deny.
func TestQuestionAnsweredTwice(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	st := start(t, c, ctx(t), sid, write("twice.txt", "x"))
	m, err := next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question, got %v %v", m, err)
	}
	q := m.GetQuestion()
	answer(st, q.QuestionId, execv1.Choice_CHOICE_DENY)
	answer(st, q.QuestionId, execv1.Choice_CHOICE_ONCE)
	m, err = next(t, st)
	if err == nil && m.GetResult().GetStatus() != execv1.Status_STATUS_DENIED {
		t.Fatalf("after deny then allow: %v", m)
	}
	if _, err := os.Stat(filepath.Join(e.root, "twice.txt")); err == nil {
		t.Fatal("a second answer turned a deny into a write")
	}
}

// A choice the question did not offer is a deny: a protected path offers no "for this session".
func TestChoiceNotOffered(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	os.MkdirAll(filepath.Join(e.root, ".vscode"), 0o755)
	res, qs, err := run(t, start(t, c, ctx(t), sid, write(".vscode/settings.json", "{}")), execv1.Choice_CHOICE_SESSION)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 {
		t.Fatalf("%d questions for a protected path, want 1", len(qs))
	}
	for _, ch := range qs[0].Choices {
		if ch == execv1.Choice_CHOICE_SESSION {
			t.Fatalf("a protected path offered %v", qs[0].Choices)
		}
	}
	if res.GetStatus() != execv1.Status_STATUS_DENIED {
		t.Fatalf("an unoffered choice was taken: %v", res)
	}
	// Negative control: "once" is offered and writes.
	res, _, _ = run(t, start(t, c, ctx(t), sid, write(".vscode/settings.json", "{}")), execv1.Choice_CHOICE_ONCE)
	if res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("control: %v", res)
	}
}

// An answer after the cancel changes nothing: the cancel already denied.
func TestAnswerAfterCancel(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	cx, cancel := context.WithCancel(ctx(t))
	st := start(t, c, cx, sid, write("late.txt", "x"))
	m, err := next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question: %v %v", m, err)
	}
	cancel()
	answer(st, m.GetQuestion().QuestionId, execv1.Choice_CHOICE_ONCE)
	next(t, st)
	// The broker settles the cancelled call; a later read must not find the file.
	res, _, _ := run(t, start(t, c, ctx(t), sid, read("late.txt")), execv1.Choice_CHOICE_DENY)
	if res.GetStatus() == execv1.Status_STATUS_COMPLETED {
		t.Fatalf("the file was written after the cancel: %s", res.Content)
	}
}

// A session belongs to the connection that opened it.
func TestOtherClientsSession(t *testing.T) {
	e := newEnv(t)
	owner, other := e.client(), e.client()
	sid := e.open(owner)
	os.WriteFile(filepath.Join(e.root, "secret.txt"), []byte("s3cret"), 0o600)

	_, _, err := run(t, start(t, other, ctx(t), sid, read("secret.txt")), execv1.Choice_CHOICE_ONCE)
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("another connection used the session: %v", err)
	}
	if _, err := other.SetMode(ctx(t), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_BUILD}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("another connection changed the mode: %v", err)
	}
	if _, err := other.CloseSession(ctx(t), &execv1.CloseSessionRequest{SessionId: sid}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("another connection closed the session: %v", err)
	}
	// Negative control: the owner reads it.
	res, _, err := run(t, start(t, owner, ctx(t), sid, read("secret.txt")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("the owner could not read: %v %v", res, err)
	}
}

// A client that closes its side while a question is open cannot answer any more: the question denies at once.
func TestHangUpDeniesOpenQuestion(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	st := start(t, c, ctx(t), sid, write("hung.txt", "x"))
	m, err := next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question: %v %v", m, err)
	}
	st.CloseSend()
	m, err = next(t, st)
	if err != nil || m.GetResult().GetStatus() != execv1.Status_STATUS_DENIED {
		t.Fatalf("after hang-up: %v %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "hung.txt")); err == nil {
		t.Fatal("written after the client hung up")
	}
}

// A front end cannot make the whole filesystem, or Garuda's own home, its project.
func TestRootThatIsNoProject(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	for _, root := range []string{"/", e.home, filepath.Join(e.home, "audit")} {
		os.MkdirAll(root, 0o700)
		if _, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: root}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("root %s: %v", root, err)
		}
	}
	// Negative control: a project folder opens.
	if _, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: e.root}); err != nil {
		t.Fatal(err)
	}
}
