package broker

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// benchBroker serves a broker for root with the user settings given, on a socket in dir, and opens a session.
func benchBroker(b testing.TB, dir, root, settings string) (execv1.ExecServiceClient, string) {
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	if settings != "" {
		os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600)
	}
	svc := NewService(Config{Home: home, ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
	srv := NewServer(svc, []uint32{uint32(os.Getuid())})
	sock := filepath.Join(dir, "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { svc.Shutdown(); srv.Stop() })
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	c := execv1.NewExecServiceClient(cc)
	r, err := c.OpenSession(context.Background(), &execv1.OpenSessionRequest{Root: root, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		b.Fatal(err)
	}
	return c, r.GetSessionId()
}

// runBash runs one sandboxed command through Call (decided, guarded, run, checked, audited), answering "once" to
// any question, and returns its result.
func runBash(b testing.TB, c execv1.ExecServiceClient, sid, command string) *execv1.Result {
	st, err := c.Call(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	op := &execv1.Start{SessionId: sid, CallId: "c1", Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: command}}}
	if err := st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: op}}); err != nil {
		b.Fatal(err)
	}
	for {
		m, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		if q := m.GetQuestion(); q != nil {
			st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Answer{Answer: &execv1.Answer{QuestionId: q.QuestionId,
				Choice: execv1.Choice_CHOICE_ONCE}}})
			continue
		}
		if r := m.GetResult(); r != nil {
			return r
		}
	}
}

// BenchmarkBashTrueBigProject is a sandboxed `true` through Call on a project of 20,000 files in 1,000 folders,
// with a "**" read-deny rule, in a session's steady state: what every command pays around its run.
func BenchmarkBashTrueBigProject(b *testing.B) {
	benchBashTrue(b, `{"permissions":{"deny":["Read(**/.env)"]}}`)
}

// BenchmarkBashTrueBigProjectNoRules is the same without read-deny rules (the default).
func BenchmarkBashTrueBigProjectNoRules(b *testing.B) { benchBashTrue(b, "") }

func benchBashTrue(b *testing.B, settings string) {
	dir := b.TempDir()
	root := filepath.Join(dir, "project")
	os.MkdirAll(root, 0o755)
	testenv.BigProject(b, root)
	c, sid := benchBroker(b, dir, root, settings)
	if r := runBash(b, c, sid, "true"); r.GetStatus() != execv1.Status_STATUS_COMPLETED {
		b.Fatalf("%v", r)
	}
	for b.Loop() {
		if r := runBash(b, c, sid, "true"); r.GetStatus() != execv1.Status_STATUS_COMPLETED {
			b.Fatalf("%v", r)
		}
	}
}
