package brokerconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/tools"
	"github.com/garuda-dev/garuda/internal/throttle"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Approver shows a broker Question to the user and returns the choice. It returns CHOICE_DENY on any failure,
// and at once when ctx ends (the turn was aborted).
type Approver interface {
	Ask(ctx context.Context, q *execv1.Question) execv1.Choice
}

// Runner implements agent.Tools over the broker for one broker session: each model tool call becomes a broker Call
// (see package tools for the table that maps them).
type Runner struct {
	Client    execv1.ExecServiceClient
	SessionID string
	Approver  Approver
	// Tools are the specs offered to the model; nil means tools.Specs().
	Tools []model.ToolSpec
	// Notice, if set, receives the broker's notices of a result (lines for the user).
	Notice func(line string)
	// ProgressEvery is the shortest time between two progress reports of one call; zero means throttle.Every.
	ProgressEvery time.Duration
	// Mode, if MODE_PLAN, narrows every call to plan mode (a subagent's calls); the broker enforces it.
	Mode execv1.Mode

	mcp mcpTools
}

var _ agent.Tools = (*Runner)(nil)

// Specs implements agent.Tools.
func (r *Runner) Specs() []model.ToolSpec {
	if r.Tools != nil {
		return append(append([]model.ToolSpec(nil), r.Tools...), r.mcpSpecs()...)
	}
	return append(tools.Specs(), r.mcpSpecs()...)
}

// ReadOnly implements agent.Tools: reads and searches may run in parallel.
func (r *Runner) ReadOnly(name string) bool {
	t, ok := tools.Lookup(name)
	return ok && t.ReadOnly
}

// Run implements agent.Tools: it runs the call through the broker and returns its result. A call the broker could
// not run ends failed with the reason; a cancelled ctx ends it cancelled.
func (r *Runner) Run(ctx context.Context, call agent.ToolCall, progress func(line string)) agent.ToolResult {
	defer r.toolRan()
	start := r.mcpStart(call.ID, call.Name, call.Input)
	var err error
	if start == nil {
		start, err = tools.Start(call.ID, call.Name, call.Input)
	}
	if err != nil {
		return agent.ToolResult{CallID: call.ID, Status: agent.StatusFailed, Content: err.Error()}
	}
	res, err := r.Call(ctx, start, progress)
	if err != nil {
		if ctx.Err() != nil {
			return agent.ToolResult{CallID: call.ID, Status: agent.StatusCancelled, Content: "Cancelled."}
		}
		return agent.ToolResult{CallID: call.ID, Status: agent.StatusFailed, Content: err.Error()}
	}
	if r.Notice != nil {
		for _, n := range res.GetNotices() {
			r.Notice(n)
		}
	}
	return Result(call.ID, res)
}

// Result turns the broker's Result into the agent's.
func Result(callID string, res *execv1.Result) agent.ToolResult {
	out := agent.ToolResult{CallID: callID, Content: res.GetContent()}
	switch res.GetStatus() {
	case execv1.Status_STATUS_COMPLETED:
		out.Status = agent.StatusCompleted
	case execv1.Status_STATUS_DENIED:
		out.Status = agent.StatusDenied
	case execv1.Status_STATUS_CANCELLED:
		out.Status = agent.StatusCancelled
	default:
		out.Status = agent.StatusFailed
	}
	for _, l := range res.GetLocations() {
		out.Locations = append(out.Locations, agent.Location{Path: l.GetPath(), Line: int(l.GetLine())})
	}
	return out
}

// Settle is how long a cancelled call waits for the broker's Result: longer than the broker's grace between SIGTERM
// and SIGKILL (execv1.CancelGrace), so that when the call returns nothing of its command runs any more.
const Settle = execv1.CancelGrace + time.Second

// Call runs one broker Call: it sends start (with this runner's session id), answers each Question through the
// Approver, reports Progress to progress (if not nil: first "" when the call goes ahead, then the tail of the output
// so far at most every ProgressEvery, never after Call returns) and
// returns the Result. Cancelling ctx cancels the call: the broker denies an open question, ends the command's whole
// process tree and answers with a cancelled Result, which Call waits for up to Settle before it ends the stream.
func (r *Runner) Call(ctx context.Context, start *execv1.Start, progress func(line string)) (*execv1.Result, error) {
	start.SessionId = r.SessionID
	if r.Mode == execv1.Mode_MODE_PLAN {
		start.Mode = r.Mode
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel() // ends the stream, whatever way the call ends
	stream, err := r.Client.Call(sctx)
	if err != nil {
		return nil, fmt.Errorf("start a broker call for %s: %w", opName(start), Words(err))
	}
	var sendMu sync.Mutex // the cancel is sent from another goroutine than the answers
	send := func(m *execv1.CallRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	if err := send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: start}}); err != nil {
		return nil, fmt.Errorf("send %s to the broker: %w", opName(start), Words(recvErr(stream, err)))
	}
	stopCancel := context.AfterFunc(ctx, func() {
		if send(&execv1.CallRequest{Msg: &execv1.CallRequest_Cancel{Cancel: &execv1.Cancel{}}}) != nil {
			cancel()
			return
		}
		time.AfterFunc(Settle, cancel)
	})
	defer stopCancel()
	th := newThrottle(progress, r.ProgressEvery)
	defer th.Stop()
	started := false
	for {
		m, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = errors.New("the broker ended the call without a result")
			}
			return nil, fmt.Errorf("%s: %w", opName(start), Words(err))
		}
		switch msg := m.GetMsg().(type) {
		case *execv1.CallResponse_Question:
			q := msg.Question
			choice := execv1.Choice_CHOICE_DENY
			if r.Approver != nil {
				choice = r.Approver.Ask(ctx, q)
			}
			ans := &execv1.CallRequest{Msg: &execv1.CallRequest_Answer{Answer: &execv1.Answer{QuestionId: q.GetQuestionId(), Choice: choice}}}
			// A failed send shows on the next Recv.
			_ = send(ans)
		case *execv1.CallResponse_Progress:
			p := msg.Progress
			if p.GetLine() == "" && len(p.GetOutput()) == 0 {
				// The broker's word that the call goes ahead (its question, if any, answered): an empty line.
				if progress != nil && !started {
					started = true
					progress("")
				}
			} else if p.GetLine() != "" {
				th.Add([]byte(p.GetLine() + "\n"))
			} else {
				th.Add(p.GetOutput())
			}
		case *execv1.CallResponse_Result:
			return msg.Result, nil
		}
	}
}

// recvErr gets the real error of a stream whose Send failed (Send reports only io.EOF).
func recvErr(stream execv1.ExecService_CallClient, err error) error {
	if err == io.EOF {
		if _, rerr := stream.Recv(); rerr != nil && rerr != io.EOF {
			return rerr
		}
	}
	return err
}

// Words is a broker error as a user reads it: a gRPC status becomes the broker's own message, here, once; any other
// error is returned as it is. Check a status's code before, not after.
func Words(err error) error {
	if s, ok := status.FromError(err); ok && s != nil && err != nil {
		return errors.New(s.Message())
	}
	return err
}

func opName(s *execv1.Start) string {
	if fd := s.ProtoReflect().WhichOneof(s.ProtoReflect().Descriptor().Oneofs().ByName("op")); fd != nil {
		return string(fd.Name())
	}
	return "an empty call"
}

// newThrottle passes progress on to fn (if not nil) at most once per interval, never after Stop. Each report is the
// tail of all the output so far, not only what came since the last one: editors replace a tool call's content with
// each update.
func newThrottle(fn func(string), every time.Duration) *throttle.Throttle {
	report := func(b []byte) {
		if s := strings.TrimRight(string(b), "\n"); s != "" && fn != nil {
			fn(s)
		}
	}
	return throttle.New(report, throttle.Config{Every: every})
}
