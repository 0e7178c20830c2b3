package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Call is the one door for everything that acts: a Start, then Questions and Progress, then a Result.
func (s *Service) Call(stream execv1.ExecService_CallServer) error {
	s.calls.Add(1)
	defer s.calls.Done()
	defer callEnded()
	first, err := stream.Recv()
	if err != nil {
		return toStatus(fmt.Errorf("read the call's start: %w", err))
	}
	start := first.GetStart()
	if start == nil {
		return toStatus(fmt.Errorf("the first message of a call must be a start: %w", ErrProtocol))
	}
	sess, err := s.session(stream.Context(), start.GetSessionId())
	if err != nil {
		return toStatus(err)
	}
	if !sess.begin() {
		return toStatus(fmt.Errorf("session %q: %w", sess.id, ErrUnknownSession))
	}
	defer sess.calls.Done()
	// The call ends when its stream ends (the front end's cancel), when its session closes, or at shutdown.
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	stopAfter := context.AfterFunc(sess.ctx, func() { cancel(context.Cause(sess.ctx)) })
	defer stopAfter()

	c := &call{ctx: ctx, cancel: cancel, stream: stream, sess: sess, start: start, answers: make(chan *execv1.Answer, 1),
		hungUp: make(chan struct{})}
	go c.receive()
	res, err := s.do(ctx, c)
	if err != nil && errors.Is(context.Cause(ctx), errCallCancelled) {
		res, err = &execv1.Result{Status: execv1.Status_STATUS_CANCELLED, Content: "Cancelled."}, nil
	}
	if err != nil {
		return toStatus(err)
	}
	if res.Status == execv1.Status_STATUS_UNSPECIFIED {
		res.Status = execv1.Status_STATUS_COMPLETED
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrProtocol) {
		return toStatus(cause)
	}
	return toStatus(c.send(&execv1.CallResponse{Msg: &execv1.CallResponse_Result{Result: res}}))
}

// errCallCancelled is the cause of a call that the front end cancelled with a Cancel message.
var errCallCancelled = fmt.Errorf("the user cancelled the call: %w", context.Canceled)

// call is one running Call.
type call struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	stream execv1.ExecService_CallServer
	sess   *session
	start  *execv1.Start

	sendMu    sync.Mutex
	sendStuck bool // a Send was left blocked when the call ended

	mu       sync.Mutex
	pending  *execv1.Question // the question waiting for its answer
	answered []string         // ids of questions already answered
	answers  chan *execv1.Answer
	hungUp   chan struct{} // closed when the client closed its sending side

	startedOnce sync.Once
}

// sendGrace is how long a message is still waited for once its call has ended.
const sendGrace = time.Second

// send sends one message, and gives up soon after the call ends: defends against a client that never reads, which
// keeps gRPC's Send blocked (flow control) and so the call, CloseSession and Shutdown waiting for ever. A Send left
// behind ends with the stream, when Call returns.
func (c *call) send(m *execv1.CallResponse) error {
	validUTF8(m)
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.sendStuck {
		return fmt.Errorf("send: %w", context.Cause(c.ctx))
	}
	done := make(chan error, 1)
	go func() { done <- c.stream.Send(m) }()
	select {
	case err := <-done:
		return err
	case <-c.ctx.Done():
	}
	// The call has ended: a client that reads still gets the message (the last Result), one that does not is left.
	select {
	case err := <-done:
		return err
	case <-time.After(sendGrace):
		c.sendStuck = true
		return fmt.Errorf("send: %w", context.Cause(c.ctx))
	}
}

// receive reads the client's answers and its cancel. Anything but one answer to the one open question, or a cancel,
// ends the call: defends against a forged "allow" for a question never asked, a second answer, and an answer for
// another call. After a cancel every answer is ignored: the call is ending, and its open question denied.
func (c *call) receive() {
	cancelled := false
	for {
		m, err := c.stream.Recv()
		if err == io.EOF {
			// The client closed its side: nothing can answer a question any more, so an open or later one denies.
			close(c.hungUp)
			return
		}
		if err != nil {
			c.cancel(err)
			return
		}
		if m.GetCancel() != nil {
			cancelled = true
			c.cancel(errCallCancelled)
			continue
		}
		a := m.GetAnswer()
		if cancelled && a != nil {
			continue
		}
		if a == nil {
			c.cancel(fmt.Errorf("a second start on one call: %w", ErrProtocol))
			return
		}
		c.mu.Lock()
		q := c.pending
		ok := q != nil && a.GetQuestionId() == q.GetQuestionId() && !slices.Contains(c.answered, a.GetQuestionId())
		if ok {
			c.pending = nil
			c.answered = append(c.answered, a.GetQuestionId())
		}
		c.mu.Unlock()
		if !ok {
			c.cancel(fmt.Errorf("answer %q is not for the open question: %w", a.GetQuestionId(), ErrProtocol))
			return
		}
		c.answers <- a
	}
}

// ask sends a question and waits for its answer. A choice the question did not offer, a cancelled call or a closed
// stream is a deny.
func (c *call) ask(q *execv1.Question) (execv1.Choice, error) {
	q.QuestionId = newID()
	q.CallId = c.start.GetCallId()
	c.mu.Lock()
	c.pending = q
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.pending = nil
		c.mu.Unlock()
	}()
	if err := c.send(&execv1.CallResponse{Msg: &execv1.CallResponse_Question{Question: q}}); err != nil {
		return execv1.Choice_CHOICE_DENY, fmt.Errorf("send the question: %w", err)
	}
	select {
	case <-c.hungUp:
		return execv1.Choice_CHOICE_DENY, nil
	case a := <-c.answers:
		if !slices.Contains(q.GetChoices(), a.GetChoice()) {
			return execv1.Choice_CHOICE_DENY, nil
		}
		return a.GetChoice(), nil
	case <-c.ctx.Done():
		return execv1.Choice_CHOICE_DENY, context.Cause(c.ctx)
	}
}

// started tells the front end, once, that the call goes ahead: an empty Progress (see the proto).
func (c *call) started() {
	c.startedOnce.Do(func() { c.progress(&execv1.Progress{}) })
}

// progress streams output or a line to the front end; a failure to send is the call's end, seen through ctx.
func (c *call) progress(p *execv1.Progress) {
	_ = c.send(&execv1.CallResponse{Msg: &execv1.CallResponse_Progress{Progress: p}})
}

// validUTF8 replaces bytes that are not UTF-8 in the text fields of a response: protobuf strings must be UTF-8,
// and a file or a command's output need not be (raw output travels as bytes in Progress).
func validUTF8(m *execv1.CallResponse) {
	fix := func(s *string) {
		if !utf8.ValidString(*s) {
			*s = strings.ToValidUTF8(*s, "\uFFFD")
		}
	}
	if q := m.GetQuestion(); q != nil {
		fix(&q.Title)
		fix(&q.Preview)
		fix(&q.Warning)
		if d := q.Diff; d != nil {
			fix(&d.Path)
			fix(&d.OldText)
			fix(&d.NewText)
		}
	}
	if r := m.GetResult(); r != nil {
		fix(&r.Content)
		for i := range r.Notices {
			fix(&r.Notices[i])
		}
		for _, l := range r.Locations {
			fix(&l.Path)
		}
		if rs := r.Resolved; rs != nil {
			fix(&rs.Prompt)
			fix(&rs.Message)
		}
	}
	if p := m.GetProgress(); p != nil {
		fix(&p.Line)
	}
}
