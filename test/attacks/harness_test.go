package attacks

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker"
	"github.com/garuda-dev/garuda/broker/sandbox"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	if len(os.Args) == 3 && os.Args[1] == allocArg {
		os.Exit(allocate(os.Args[2]))
	}
	os.Exit(m.Run())
}

// tb is what the harness needs of a test or a benchmark.
type tb interface {
	Helper()
	Fatal(...any)
	TempDir() string
	Cleanup(func())
}

// env is one broker, served in process on a unix socket, with a project root and a GARUDA_HOME.
type env struct {
	t    tb
	sock string
	root string
	home string
	svc  *broker.Service
}

func newEnv(t *testing.T) *env { return newBenchEnv(t) }

func newBenchEnv(t tb) *env {
	t.Helper()
	dir := t.TempDir()
	return newEnvIn(t, dir, filepath.Join(dir, "project"), filepath.Join(dir, "home"))
}

// newEnvIn serves a broker on a socket in dir, for the project root and GARUDA_HOME given.
func newEnvIn(t tb, dir, root, home string) *env {
	t.Helper()
	e := &env{t: t, sock: filepath.Join(dir, "b.sock"), root: root, home: home}
	os.MkdirAll(e.root, 0o755)
	os.MkdirAll(e.home, 0o700)
	e.svc = broker.NewService(broker.Config{Home: e.home, ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
	srv := broker.NewServer(e.svc, []uint32{uint32(os.Getuid())})
	ln, err := net.Listen("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { e.svc.Shutdown(); srv.Stop() })
	return e
}

// client is one connection to the broker, as one front end.
func (e *env) client() execv1.ExecServiceClient {
	e.t.Helper()
	cc, err := grpc.NewClient("unix://"+e.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cc.Close() })
	return execv1.NewExecServiceClient(cc)
}

func (e *env) open(c execv1.ExecServiceClient) string {
	e.t.Helper()
	r, err := c.OpenSession(context.Background(), &execv1.OpenSessionRequest{Root: e.root, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.SessionId
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// start opens a Call with one operation.
func start(t *testing.T, c execv1.ExecServiceClient, cx context.Context, sid string, op *execv1.Start) execv1.ExecService_CallClient {
	t.Helper()
	st, err := c.Call(cx)
	if err != nil {
		t.Fatal(err)
	}
	op.SessionId = sid
	if op.CallId == "" {
		op.CallId = "call-1"
	}
	if err := st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: op}}); err != nil {
		t.Fatal(err)
	}
	return st
}

func answer(st execv1.ExecService_CallClient, id string, ch execv1.Choice) error {
	return st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Answer{Answer: &execv1.Answer{QuestionId: id, Choice: ch}}})
}

// next returns the next message that is not progress.
func next(t *testing.T, st execv1.ExecService_CallClient) (*execv1.CallResponse, error) {
	for {
		m, err := st.Recv()
		if err != nil || m.GetProgress() == nil {
			return m, err
		}
	}
}

// run answers every question with ch and returns the result.
func run(t *testing.T, st execv1.ExecService_CallClient, ch execv1.Choice) (*execv1.Result, []*execv1.Question, error) {
	t.Helper()
	var qs []*execv1.Question
	for {
		m, err := next(t, st)
		if err != nil {
			return nil, qs, err
		}
		if q := m.GetQuestion(); q != nil {
			qs = append(qs, q)
			if err := answer(st, q.QuestionId, ch); err != nil {
				return nil, qs, err
			}
			continue
		}
		return m.GetResult(), qs, nil
	}
}

func write(path, content string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_WriteFile{WriteFile: &execv1.WriteFile{Path: path, Content: content}}}
}

func read(path string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_ReadFile{ReadFile: &execv1.ReadFile{Path: path}}}
}

// newEnvAt is newEnv with a chosen root and GARUDA_HOME (for a home inside the root, as when the project is the
// user's own home folder).
func newEnvAt(t *testing.T, root, home string) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir(), root, home)
}

// sh runs a sandboxed command in build mode (answering "once" should anything ask) and returns its result.
func sh(t *testing.T, c execv1.ExecServiceClient, sid, cmd string) *execv1.Result {
	t.Helper()
	res, _, err := run(t, start(t, c, ctx(t), sid, bash(cmd)), execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	return res
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileText(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func grepOp(pattern, mode string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: pattern, OutputMode: mode}}}
}

func globOp(pattern string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: pattern}}}
}

func editOp(path, old, new string, all bool) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: path, OldString: old, NewString: new, ReplaceAll: all}}}
}

// within runs one call answering every question with ch, and fails when it takes longer than d (the broker is
// then still busy with it: the cleanup may have to wait for it to end).
func within(t *testing.T, c execv1.ExecServiceClient, sid string, op *execv1.Start, ch execv1.Choice,
	d time.Duration) (*execv1.Result, error) {
	t.Helper()
	cx, cancel := context.WithTimeout(ctx(t), d)
	defer cancel()
	began := time.Now()
	res, _, err := run(t, start(t, c, cx, sid, op), ch)
	if status.Code(err) == codes.DeadlineExceeded {
		t.Errorf("%v: still running after %v (the broker is stuck on it)", op, time.Since(began).Round(time.Millisecond))
	}
	return res, err
}

// leaked reports whether a call reached a secret: its content shows it, or a write landed.
func leaked(res *execv1.Result, secret string) bool {
	return strings.Contains(res.GetContent(), secret)
}
