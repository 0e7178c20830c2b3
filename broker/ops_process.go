package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Bounds of wait.
const (
	defaultProcWait = 30 * time.Second
	maxProcWait     = 10 * time.Minute
)

// checkProcess checks a process_manager request. start is decided exactly as bash is (commandRequest, the same
// question, spec, guard and limits through prepareCommand), always in the sandbox. The other actions decide inside
// run: they act only on the calling session's own processes, which their start's decision allowed, and a process
// of another session has no name in this one.
func checkProcess(s *Service, c *call) (*request, error) {
	op := c.start.GetProcessManager()
	switch op.GetAction() {
	case execv1.ProcessAction_PROCESS_ACTION_START:
		cmdText := op.GetCommand()
		if strings.TrimSpace(cmdText) == "" {
			return nil, errors.New("process_manager start: the command is empty")
		}
		return &request{
			policy: commandRequest(c, cmdText, false),
			input:  "start: " + cmdText,
			run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
				if res, err := g.confirm(commandQuestion(cmdText, false)); res != nil || err != nil {
					return res, err
				}
				return s.processStart(c, op)
			},
		}, nil
	case execv1.ProcessAction_PROCESS_ACTION_LIST:
		return &request{input: "list", run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			c.started()
			return processList(c.sess), nil
		}}, nil
	case execv1.ProcessAction_PROCESS_ACTION_READ, execv1.ProcessAction_PROCESS_ACTION_WAIT,
		execv1.ProcessAction_PROCESS_ACTION_INPUT, execv1.ProcessAction_PROCESS_ACTION_STOP:
	default:
		return nil, errors.New("the action is missing or unknown; use start, list, read, wait, input or stop")
	}
	id := op.GetId()
	if id == "" {
		return nil, fmt.Errorf("process_manager %s: the id is required", actionName(op.GetAction()))
	}
	if op.GetTimeoutMs() < 0 || op.GetSince() < 0 {
		return nil, fmt.Errorf("process_manager %s: timeout_ms and since cannot be negative", actionName(op.GetAction()))
	}
	return &request{input: actionName(op.GetAction()) + " " + id, run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
		p, err := c.sess.procs.get(id)
		if err != nil {
			return failed(err), nil
		}
		c.started()
		switch op.GetAction() {
		case execv1.ProcessAction_PROCESS_ACTION_READ:
			return processRead(p, op.GetSince(), ""), nil
		case execv1.ProcessAction_PROCESS_ACTION_WAIT:
			return processWait(ctx, p, op), nil
		case execv1.ProcessAction_PROCESS_ACTION_INPUT:
			if s.callState(c).Mode == policy.ModePlan && p.writable {
				req := policy.Request{Kind: policy.KindCommand, Tool: policy.OpProcessManager, Command: p.command, Sandboxed: true,
					Dir: c.sess.root}
				return s.refuseWritableInPlan(c, policy.OpProcessManager, req, "process "+p.id)
			}
			msg, err := p.input(op.GetInput(), op.GetCloseInput())
			if err != nil {
				return failed(err), nil
			}
			return &execv1.Result{Content: msg}, nil
		default:
			return processStop(p), nil
		}
	}}, nil
}

func actionName(a execv1.ProcessAction) string {
	return strings.ToLower(strings.TrimPrefix(a.String(), "PROCESS_ACTION_"))
}

// processStart starts a command the policy allowed in the background.
func (s *Service) processStart(c *call, op *execv1.ProcessManager) (*execv1.Result, error) {
	sess := c.sess
	if err := sess.procs.room(policy.BackgroundLimit(s.state(sess))); err != nil {
		return failed(err), nil // before the guard's scan: a refused start costs nothing
	}
	spec, watch, refused := s.prepareCommand(c, &execv1.Bash{Command: op.GetCommand(), Description: op.GetDescription()})
	if refused != nil {
		return refused, nil
	}
	p, err := s.startProcess(sess, op.GetCommand(), spec, watch)
	if err != nil {
		watch.End()
		return failed(err), nil
	}
	return &execv1.Result{Content: fmt.Sprintf("id: %s\nRunning in the background: %s\nRead its output with process_manager "+
		"read (since the mark each read gives), wait for it to end with wait, stop it with stop. It ends with the session.",
		p.id, p.command)}, nil
}

// processList lists the session's processes.
func processList(sess *session) *execv1.Result {
	ps := sess.procs.list()
	if len(ps) == 0 {
		return &execv1.Result{Content: "No background processes in this session."}
	}
	var b strings.Builder
	for _, p := range ps {
		p.mu.Lock()
		total := p.out.total
		p.mu.Unlock()
		fmt.Fprintf(&b, "%s: %s; %d bytes of output; $ %s\n", p.id, p.state(), total, p.command)
	}
	return &execv1.Result{Content: strings.TrimRight(b.String(), "\n")}
}

// processRead is the process's state and its output since the mark, with the next mark.
func processRead(p *proc, since int64, head string) *execv1.Result {
	out, next := p.read(since)
	var b strings.Builder
	if head != "" {
		b.WriteString(head + "\n")
	}
	fmt.Fprintf(&b, "Process %s: %s. Output since %d (next mark: %d):\n", p.id, p.state(), since, next)
	if out == "" {
		b.WriteString("(no new output)")
	}
	b.WriteString(out)
	res := &execv1.Result{}
	p.mu.Lock()
	notes := append([]string(nil), p.notes...)
	if p.end != "" {
		res.ExitCode = int32(p.code)
	}
	p.mu.Unlock()
	for _, n := range notes {
		b.WriteString("\n" + n)
	}
	res.Content = b.String()
	return res
}

// processWait waits for the process to end, at most the timeout (or until the call is cancelled), then reads.
func processWait(ctx context.Context, p *proc, op *execv1.ProcessManager) *execv1.Result {
	d := defaultProcWait
	if ms := op.GetTimeoutMs(); ms > 0 {
		d = min(time.Duration(ms)*time.Millisecond, maxProcWait)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	head := ""
	select {
	case <-p.done:
	case <-t.C:
		head = fmt.Sprintf("Still running after %s.", d)
	case <-ctx.Done():
		res := processRead(p, op.GetSince(), "The wait was cancelled; the process goes on.")
		res.Status = execv1.Status_STATUS_CANCELLED
		return res
	}
	return processRead(p, op.GetSince(), head)
}

// processStop stops the process (SIGTERM, TermGrace, SIGKILL of its namespace) and waits until it is gone.
func processStop(p *proc) *execv1.Result {
	if p.isDone() {
		return &execv1.Result{Content: fmt.Sprintf("Process %s had already ended: %s.", p.id, p.state())}
	}
	p.stop("by process_manager stop")
	if !p.waitStopped() {
		return failed(fmt.Errorf("process %s did not end within %s of its stop", p.id, stopSettle))
	}
	p.mu.Lock()
	since := max(0, p.out.total-stopTail)
	p.mu.Unlock()
	return processRead(p, since, "")
}

// stopTail is how much of the output's end a stop shows.
const stopTail = 2 << 10
