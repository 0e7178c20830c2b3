package brokerconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/garuda-dev/garuda/frontend/agent"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

type scripted struct {
	execv1.UnimplementedExecServiceServer
	script func(start *execv1.Start, stream execv1.ExecService_CallServer) error
}

func (s *scripted) Call(stream execv1.ExecService_CallServer) error {
	m, err := stream.Recv()
	if err != nil {
		return err
	}
	return s.script(m.GetStart(), stream)
}

func dial(t *testing.T, script func(*execv1.Start, execv1.ExecService_CallServer) error) execv1.ExecServiceClient {
	t.Helper()
	ln := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	execv1.RegisterExecServiceServer(srv, &scripted{script: script})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return ln.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return execv1.NewExecServiceClient(cc)
}

type approverFunc func(context.Context, *execv1.Question) execv1.Choice

func (f approverFunc) Ask(ctx context.Context, q *execv1.Question) execv1.Choice { return f(ctx, q) }

func TestRunAnswersQuestionsAndReturnsResult(t *testing.T) {
	var gotAnswer *execv1.Answer
	var gotStart *execv1.Start
	client := dial(t, func(start *execv1.Start, stream execv1.ExecService_CallServer) error {
		gotStart = start
		q := &execv1.Question{QuestionId: "q1", CallId: start.GetCallId(), Title: "Edit a.go",
			Choices: []execv1.Choice{execv1.Choice_CHOICE_ONCE, execv1.Choice_CHOICE_SESSION, execv1.Choice_CHOICE_DENY}}
		if err := stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Question{Question: q}}); err != nil {
			return err
		}
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		gotAnswer = m.GetAnswer()
		stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Progress{Progress: &execv1.Progress{Line: "working"}}})
		return stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Result{Result: &execv1.Result{
			Status: execv1.Status_STATUS_COMPLETED, Content: "edited", Locations: []*execv1.Location{{Path: "/r/a.go", Line: 4}},
			Notices: []string{"Garuda: a notice"},
		}}})
	})
	var asked []string
	var notices []string
	r := &Runner{Client: client, SessionID: "s1", Notice: func(l string) { notices = append(notices, l) },
		Approver: approverFunc(func(_ context.Context, q *execv1.Question) execv1.Choice {
			asked = append(asked, q.GetCallId())
			return execv1.Choice_CHOICE_SESSION
		})}
	var progress []string
	res := r.Run(context.Background(), agent.ToolCall{ID: "toolu_7", Name: "edit_file",
		Input: json.RawMessage(`{"path":"a.go","old_string":"a","new_string":"b"}`)},
		func(l string) { progress = append(progress, l) })
	if res.Status != agent.StatusCompleted || res.Content != "edited" || res.CallID != "toolu_7" {
		t.Fatalf("result %+v", res)
	}
	if len(res.Locations) != 1 || res.Locations[0] != (agent.Location{Path: "/r/a.go", Line: 4}) {
		t.Errorf("locations %+v", res.Locations)
	}
	if gotStart.GetSessionId() != "s1" || gotStart.GetCallId() != "toolu_7" || gotStart.GetEditFile() == nil {
		t.Errorf("start %v", gotStart)
	}
	if len(asked) != 1 || asked[0] != "toolu_7" {
		t.Errorf("the approver was asked about %v, want the call toolu_7", asked)
	}
	if gotAnswer.GetQuestionId() != "q1" || gotAnswer.GetChoice() != execv1.Choice_CHOICE_SESSION {
		t.Errorf("answer %v", gotAnswer)
	}
	if len(progress) != 1 || progress[0] != "working" {
		t.Errorf("progress %q", progress)
	}
	if len(notices) != 1 {
		t.Errorf("notices %q", notices)
	}
}

func TestRunStatuses(t *testing.T) {
	for st, want := range map[execv1.Status]agent.Status{
		execv1.Status_STATUS_COMPLETED:   agent.StatusCompleted,
		execv1.Status_STATUS_FAILED:      agent.StatusFailed,
		execv1.Status_STATUS_DENIED:      agent.StatusDenied,
		execv1.Status_STATUS_CANCELLED:   agent.StatusCancelled,
		execv1.Status_STATUS_UNSPECIFIED: agent.StatusFailed,
	} {
		client := dial(t, func(_ *execv1.Start, stream execv1.ExecService_CallServer) error {
			return stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Result{Result: &execv1.Result{Status: st, Content: "why"}}})
		})
		res := (&Runner{Client: client}).Run(context.Background(), agent.ToolCall{ID: "c", Name: "bash",
			Input: json.RawMessage(`{"command":"x"}`)}, nil)
		if res.Status != want || res.Content != "why" {
			t.Errorf("%v: got %+v, want %v", st, res, want)
		}
	}
}

func TestRunBrokerErrorFails(t *testing.T) {
	client := dial(t, func(*execv1.Start, execv1.ExecService_CallServer) error {
		return status.Error(codes.InvalidArgument, "path outside the root")
	})
	res := (&Runner{Client: client}).Run(context.Background(), agent.ToolCall{ID: "c", Name: "read_file",
		Input: json.RawMessage(`{"path":"/etc/x"}`)}, nil)
	if res.Status != agent.StatusFailed || !strings.Contains(res.Content, "path outside the root") {
		t.Errorf("got %+v", res)
	}
	bad := (&Runner{Client: client}).Run(context.Background(), agent.ToolCall{ID: "c", Name: "read_file", Input: json.RawMessage(`{}`)}, nil)
	if bad.Status != agent.StatusFailed || !strings.Contains(bad.Content, "path") {
		t.Errorf("bad input: %+v", bad)
	}
}

// A cancel is sent to the broker, which ends the command and still answers: the call returns the broker's Result
// (the command is gone by then), not an error of its own.
func TestRunCancelWaitsForTheBrokersResult(t *testing.T) {
	started := make(chan struct{})
	client := dial(t, func(_ *execv1.Start, stream execv1.ExecService_CallServer) error {
		close(started)
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		if m.GetCancel() == nil {
			return fmt.Errorf("got %v, want a cancel", m)
		}
		return stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Result{Result: &execv1.Result{
			Status: execv1.Status_STATUS_CANCELLED, Content: "killed after 1 s"}}})
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res := (&Runner{Client: client}).Run(ctx, agent.ToolCall{ID: "c", Name: "bash", Input: json.RawMessage(`{"command":"sleep 60"}`)}, nil)
	if res.Status != agent.StatusCancelled || res.Content != "killed after 1 s" {
		t.Errorf("got %+v, want the broker's cancelled result", res)
	}
}

// A broker that does not answer the cancel (an older one, or a stuck one): the stream ends after Settle.
func TestRunCancelEndsTheBrokerCall(t *testing.T) {
	ended := make(chan error, 1)
	started := make(chan struct{})
	client := dial(t, func(_ *execv1.Start, stream execv1.ExecService_CallServer) error {
		close(started)
		<-stream.Context().Done() // the broker sees the cancel: this is where it kills the command
		ended <- stream.Context().Err()
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res := (&Runner{Client: client}).Run(ctx, agent.ToolCall{ID: "c", Name: "bash", Input: json.RawMessage(`{"command":"sleep 60"}`)}, nil)
	if res.Status != agent.StatusCancelled {
		t.Errorf("got %+v, want cancelled", res)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the broker's call ended with %v, want canceled", err)
	}
}

func TestQuestionDeniedWithoutApprover(t *testing.T) {
	var got execv1.Choice
	client := dial(t, func(start *execv1.Start, stream execv1.ExecService_CallServer) error {
		stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Question{Question: &execv1.Question{QuestionId: "q"}}})
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		got = m.GetAnswer().GetChoice()
		return stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Result{Result: &execv1.Result{Status: execv1.Status_STATUS_DENIED}}})
	})
	(&Runner{Client: client}).Run(context.Background(), agent.ToolCall{ID: "c", Name: "bash", Input: json.RawMessage(`{"command":"x"}`)}, nil)
	if got != execv1.Choice_CHOICE_DENY {
		t.Errorf("answer %v, want deny", got)
	}
}

func TestProgressIsThrottled(t *testing.T) {
	client := dial(t, func(_ *execv1.Start, stream execv1.ExecService_CallServer) error {
		for i := 0; i < 100; i++ {
			stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Progress{Progress: &execv1.Progress{Output: []byte("line\n")}}})
		}
		return stream.Send(&execv1.CallResponse{Msg: &execv1.CallResponse_Result{Result: &execv1.Result{Status: execv1.Status_STATUS_COMPLETED}}})
	})
	var mu sync.Mutex
	calls := 0
	// With an interval longer than the test, only the first report may pass, and none after Run returns.
	r := &Runner{Client: client, ProgressEvery: time.Hour}
	r.Run(context.Background(), agent.ToolCall{ID: "c", Name: "bash", Input: json.RawMessage(`{"command":"yes"}`)}, func(string) {
		mu.Lock()
		calls++
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("progress reported %d times, want 1", calls)
	}
}

func TestReadOnly(t *testing.T) {
	r := &Runner{}
	for name, want := range map[string]bool{"read_file": true, "glob": true, "grep": true, "bash": false,
		"write_file": false, "edit_file": false, "skill": false} {
		if r.ReadOnly(name) != want {
			t.Errorf("ReadOnly(%s) != %v", name, want)
		}
	}
	if len(r.Specs()) == 0 {
		t.Error("no specs")
	}
}
