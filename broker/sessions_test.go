package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/garuda-dev/garuda/broker/peercred"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// resumeStream is the server side of a ResumeSession call, for calling the handler directly as one peer.
type resumeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (r resumeStream) Context() context.Context                 { return r.ctx }
func (r resumeStream) Send(*execv1.ResumeSessionResponse) error { return nil }

func asUID(uid uint32) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: peercred.AuthInfo{Peer: peercred.Peer{UID: uid}}})
}

// A shared broker tells another user nothing of a session it has open: resuming it answers as for the same session
// closed, not "open already". Control: to its owner it is open already.
func TestResumeOfAnotherUsersOpenSessionSaysNothingOfIt(t *testing.T) {
	dir := t.TempDir()
	const owner, other = 5001, 5002
	root := filepath.Join(dir, "project")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, owner, owner); err != nil {
		t.Fatal(err)
	}
	s := NewService(Config{Home: filepath.Join(dir, "home"), ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
	t.Cleanup(s.Shutdown)
	res, err := s.OpenSession(asUID(owner), &execv1.OpenSessionRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	id := res.GetSessionId()
	resume := func(uid uint32) string {
		err := s.ResumeSession(&execv1.ResumeSessionRequest{SessionId: id, Root: root}, resumeStream{ctx: asUID(uid)})
		if err == nil {
			t.Fatalf("resume as %d: no error", uid)
		}
		return err.Error()
	}
	if got := resume(owner); !strings.Contains(got, "open already") {
		t.Fatalf("control: its owner resuming it: %s", got)
	}
	open := resume(other)
	if _, err := s.CloseSession(asUID(owner), &execv1.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if closed := resume(other); open != closed {
		t.Errorf("another user's session answers %q while open, %q once closed", open, closed)
	}
}
