// The bash operation: its check, its question, the run of a command the policy allowed, and its result.

package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// unsandboxedWarning is shown above the question to run a command outside the sandbox.
const unsandboxedWarning = "Outside the sandbox: this command can use the network and write anywhere your user can."

func checkBash(s *Service, c *call) (*request, error) {
	op := c.start.GetBash()
	cmdText := op.GetCommand()
	if strings.TrimSpace(cmdText) == "" {
		return nil, errors.New("bash: the command is empty")
	}
	return &request{
		policy: commandRequest(c, cmdText, op.GetUnsandboxed()),
		input:  cmdText,
		run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			if res, err := g.confirm(commandQuestion(cmdText, op.GetUnsandboxed())); res != nil || err != nil {
				return res, err
			}
			return s.bash(ctx, c, g.op, op)
		},
	}, nil
}

// commandRequest is what the policy decides for a command: bash and a background process's start alike, so that
// the same rules, mode and team policy apply to both.
func commandRequest(c *call, cmdText string, unsandboxed bool) policy.Request {
	return policy.Request{Kind: policy.KindCommand, Tool: policy.OpBash, Command: cmdText, Sandboxed: !unsandboxed, Dir: c.sess.root}
}

// commandQuestion is the question asked before a command runs.
func commandQuestion(cmdText string, unsandboxed bool) *execv1.Question {
	q := &execv1.Question{Title: "$ " + cmdText, Preview: cmdText}
	if unsandboxed {
		q.Warning = unsandboxedWarning
	}
	return q
}

// bash runs a command the policy allowed.
func (s *Service) bash(ctx context.Context, c *call, bashOp *operation, op *execv1.Bash) (*execv1.Result, error) {
	sess := c.sess
	st := s.callState(c)
	spec, err := s.commandSpec(sess, st, op)
	if err != nil {
		return failed(err), nil
	}
	if !op.GetUnsandboxed() {
		// The network policy, through the broker's proxy: the command's only way out.
		px, err := s.startProxy(ctx, sess, s.commandNetwork(c, bashOp, sess, op.GetCommand()))
		if err != nil {
			return failed(err), nil
		}
		defer px.stop()
		spec.Proxy = px.socket
	}
	pr := newProgress(c)
	spec.OnOutput = pr.Add
	res, undone, err := s.runGuarded(ctx, c, st, policy.OpBash, spec)
	pr.End()
	var fail *runFailure
	if errors.As(err, &fail) {
		return failed(fail.err), nil
	}
	if err != nil {
		return nil, err
	}
	out := &execv1.Result{ExitCode: int32(res.ExitCode), Notices: res.Notices}
	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(string(res.Output), string(utf8.RuneError)))
	var how string
	out.Status, how = commandEnd(res, ctx.Err() != nil, spec.Timeout)
	if how != "" {
		b.WriteString("\n" + how)
	}
	for _, n := range res.Notices {
		b.WriteString("\n" + n)
	}
	for _, l := range undone {
		b.WriteString("\n" + l)
		out.Notices = append(out.Notices, "Garuda: "+l)
	}
	out.Content = strings.TrimLeft(b.String(), "\n")
	if out.Content == "" {
		out.Content = "(no output)"
	}
	return out, nil
}

// commandEnd is the status of a command that ran, and the line that says how it ended ("" for exit 0).
func commandEnd(res *sandbox.Result, cancelled bool, timeout time.Duration) (execv1.Status, string) {
	switch {
	case res.Cancelled || cancelled:
		return execv1.Status_STATUS_CANCELLED, "[cancelled]"
	case res.TimedOut:
		return execv1.Status_STATUS_FAILED, fmt.Sprintf("[timed out after %s; the command and everything it started were killed]", timeout)
	case len(res.LimitsHit) > 0:
		return execv1.Status_STATUS_FAILED, fmt.Sprintf("[exit code %d: %s]", res.ExitCode, strings.Join(res.LimitsHit, "; "))
	case res.ExitCode != 0:
		return execv1.Status_STATUS_FAILED, fmt.Sprintf("[exit code %d]", res.ExitCode)
	}
	return execv1.Status_STATUS_COMPLETED, ""
}
