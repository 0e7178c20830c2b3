package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Approver shows a broker Question to the user and returns the choice. It returns CHOICE_DENY on any failure,
// and at once when ctx ends (the turn was aborted).
type Approver interface {
	Ask(ctx context.Context, q *execv1.Question) execv1.Choice
}

// DefaultProgressEvery is the shortest time between two progress reports of one call.
const DefaultProgressEvery = 250 * time.Millisecond

// maxPending bounds the progress text kept between two reports; older output is dropped.
const maxPending = 4096

// Runner implements agent.Tools over the broker for one broker session.
type Runner struct {
	Client    execv1.ExecServiceClient
	SessionID string
	Approver  Approver
	// Tools are the specs offered to the model; nil means agent.ToolSpecs().
	Tools []model.ToolSpec
	// Notice, if set, receives the broker's notices of a result (lines for the user).
	Notice func(line string)
	// ProgressEvery is the shortest time between two progress reports of one call; zero means DefaultProgressEvery.
	ProgressEvery time.Duration
}

var _ agent.Tools = (*Runner)(nil)

// Specs implements agent.Tools.
func (r *Runner) Specs() []model.ToolSpec {
	if r.Tools != nil {
		return r.Tools
	}
	return agent.ToolSpecs()
}

// ReadOnly implements agent.Tools: reads and searches may run in parallel.
func (r *Runner) ReadOnly(name string) bool {
	switch name {
	case agent.ToolReadFile, agent.ToolGlob, agent.ToolGrep:
		return true
	}
	return false
}

// Run implements agent.Tools: it runs the call through the broker and returns its result. A call the broker could
// not run ends failed with the reason; a cancelled ctx ends it cancelled.
func (r *Runner) Run(ctx context.Context, call agent.ToolCall, progress func(line string)) agent.ToolResult {
	start, err := Start(call)
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

// Settle is how long a cancelled call waits for the broker's Result: longer than the broker's 2 s grace between
// SIGTERM and SIGKILL, so that when the call returns nothing of its command runs any more.
const Settle = 3 * time.Second

// Call runs one broker Call: it sends start (with this runner's session id), answers each Question through the
// Approver, reports Progress to progress (if not nil, at most every ProgressEvery, never after Call returns) and
// returns the Result. Cancelling ctx cancels the call: the broker denies an open question, ends the command's whole
// process tree and answers with a cancelled Result, which Call waits for up to Settle before it ends the stream.
func (r *Runner) Call(ctx context.Context, start *execv1.Start, progress func(line string)) (*execv1.Result, error) {
	start.SessionId = r.SessionID
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel() // ends the stream, whatever way the call ends
	stream, err := r.Client.Call(sctx)
	if err != nil {
		return nil, fmt.Errorf("start a broker call for %s: %w", opName(start), brokerErr(err))
	}
	var sendMu sync.Mutex // the cancel is sent from another goroutine than the answers
	send := func(m *execv1.CallRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	if err := send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: start}}); err != nil {
		return nil, fmt.Errorf("send %s to the broker: %w", opName(start), brokerErr(recvErr(stream, err)))
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
	defer th.stop()
	for {
		m, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = errors.New("the broker ended the call without a result")
			}
			return nil, fmt.Errorf("%s: %w", opName(start), brokerErr(err))
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
			if p.GetLine() != "" {
				th.add(p.GetLine() + "\n")
			} else if len(p.GetOutput()) > 0 {
				th.add(string(p.GetOutput()))
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

// brokerErr keeps the broker's own message of a gRPC status error.
func brokerErr(err error) error {
	if s, ok := status.FromError(err); ok && s != nil {
		return fmt.Errorf("the broker answered %s: %s", s.Code(), s.Message())
	}
	return err
}

func opName(s *execv1.Start) string {
	switch s.GetOp().(type) {
	case *execv1.Start_ReadFile:
		return agent.ToolReadFile
	case *execv1.Start_WriteFile:
		return agent.ToolWriteFile
	case *execv1.Start_EditFile:
		return agent.ToolEditFile
	case *execv1.Start_Glob:
		return agent.ToolGlob
	case *execv1.Start_Grep:
		return agent.ToolGrep
	case *execv1.Start_Bash:
		return agent.ToolBash
	case *execv1.Start_LoadSkill:
		return agent.ToolSkill
	case *execv1.Start_ResolveCommand:
		return "resolve_command"
	case *execv1.Start_AttachMention:
		return "attach_mention"
	}
	return fmt.Sprintf("%T", s.GetOp())
}

// Start turns a model tool call into the broker's typed request. An input that does not fit the tool's schema is
// an error the model reads.
func Start(call agent.ToolCall) (*execv1.Start, error) {
	in := call.Input
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	s := &execv1.Start{CallId: call.ID}
	bad := func(err error) (*execv1.Start, error) {
		return nil, fmt.Errorf("the input of %s is not valid: %w", call.Name, err)
	}
	switch call.Name {
	case agent.ToolReadFile:
		var v struct {
			Path          string
			Offset, Limit int32
		}
		if err := decode(in, &v, "path"); err != nil {
			return bad(err)
		}
		s.Op = &execv1.Start_ReadFile{ReadFile: &execv1.ReadFile{Path: v.Path, Offset: v.Offset, Limit: v.Limit}}
	case agent.ToolWriteFile:
		var v struct{ Path, Content string }
		if err := decode(in, &v, "path"); err != nil {
			return bad(err)
		}
		s.Op = &execv1.Start_WriteFile{WriteFile: &execv1.WriteFile{Path: v.Path, Content: v.Content}}
	case agent.ToolEditFile:
		var v struct {
			Path       string
			OldString  string `json:"old_string"`
			NewString  string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		}
		if err := decode(in, &v, "path"); err != nil {
			return bad(err)
		}
		s.Op = &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: v.Path, OldString: v.OldString, NewString: v.NewString, ReplaceAll: v.ReplaceAll}}
	case agent.ToolGlob:
		var v struct{ Pattern, Path string }
		if err := decode(in, &v, "pattern"); err != nil {
			return bad(err)
		}
		s.Op = &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: v.Pattern, Path: v.Path}}
	case agent.ToolGrep:
		var v struct {
			Pattern, Path, Glob string
			CaseInsensitive     bool   `json:"case_insensitive"`
			Context             int32  `json:"context"`
			OutputMode          string `json:"output_mode"`
		}
		if err := decode(in, &v, "pattern"); err != nil {
			return bad(err)
		}
		s.Op = &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: v.Pattern, Path: v.Path, Glob: v.Glob, CaseInsensitive: v.CaseInsensitive, Context: v.Context, OutputMode: v.OutputMode}}
	case agent.ToolBash:
		var v struct {
			Command     string
			TimeoutMS   int32 `json:"timeout_ms"`
			Description string
			Sandbox     *bool
		}
		if err := decode(in, &v, "command"); err != nil {
			return bad(err)
		}
		// Only an explicit false leaves the sandbox; the broker then always asks the user.
		unsandboxed := v.Sandbox != nil && !*v.Sandbox
		s.Op = &execv1.Start_Bash{Bash: &execv1.Bash{Command: v.Command, TimeoutMs: v.TimeoutMS, Description: v.Description, Unsandboxed: unsandboxed}}
	case agent.ToolSkill:
		var v struct{ Name string }
		if err := decode(in, &v, "name"); err != nil {
			return bad(err)
		}
		s.Op = &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: v.Name}}
	default:
		return nil, fmt.Errorf("there is no tool named %q", call.Name)
	}
	return s, nil
}

// decode reads a tool input into v and checks that the required string field is not empty.
func decode(in json.RawMessage, v any, required string) error {
	if err := json.Unmarshal(in, v); err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(in, &m); err != nil {
		return err
	}
	if s, _ := m[required].(string); s == "" {
		return fmt.Errorf("%q is required", required)
	}
	return nil
}

// throttle passes progress on at most once per interval, with everything that arrived since (its tail), and
// never after stop.
type throttle struct {
	fn    func(string)
	every time.Duration

	mu      sync.Mutex
	pending strings.Builder
	last    time.Time
	timer   *time.Timer
	done    bool
}

func newThrottle(fn func(string), every time.Duration) *throttle {
	if every <= 0 {
		every = DefaultProgressEvery
	}
	return &throttle{fn: fn, every: every}
}

func (t *throttle) add(s string) {
	if t.fn == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	t.pending.WriteString(s)
	if t.pending.Len() > maxPending {
		tail := t.pending.String()[t.pending.Len()-maxPending:]
		t.pending.Reset()
		t.pending.WriteString(tail)
	}
	if wait := t.every - time.Since(t.last); wait > 0 {
		if t.timer == nil {
			t.timer = time.AfterFunc(wait, t.flush)
		}
		return
	}
	t.flushLocked()
}

func (t *throttle) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer = nil
	if !t.done {
		t.flushLocked()
	}
}

func (t *throttle) flushLocked() {
	if t.pending.Len() == 0 {
		return
	}
	s := strings.TrimRight(t.pending.String(), "\n")
	t.pending.Reset()
	t.last = time.Now()
	if s != "" {
		t.fn(s)
	}
}

func (t *throttle) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}
