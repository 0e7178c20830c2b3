package acpagent

import (
	"context"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// approver asks the editor with session/request_permission.
type approver struct{ sess *acpSession }

// Ask implements brokerconn.Approver. Any failure, a cancelled answer or an unknown option is a deny; an aborted turn
// is a deny at once, without waiting for the editor.
func (a *approver) Ask(ctx context.Context, q *execv1.Question) execv1.Choice {
	a.sess.mu.Lock()
	t := a.sess.turn
	a.sess.mu.Unlock()
	if t == nil || ctx.Err() != nil {
		return execv1.Choice_CHOICE_DENY
	}
	a.sess.notifyHooks(q.GetTitle())
	if ask := a.sess.srv.opts.Ask; ask != nil {
		if c, ok := ask(ctx, a.sess.id, q); ok {
			return c
		}
	}
	return t.ask(ctx, q)
}

// option is an editor option of a broker choice, as the spec's table says.
var options = map[execv1.Choice]acp.PermissionOption{
	execv1.Choice_CHOICE_ONCE:    {OptionId: "once", Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow once"},
	execv1.Choice_CHOICE_SESSION: {OptionId: "session", Kind: acp.PermissionOptionKindAllowAlways, Name: "Allow for this session"},
	execv1.Choice_CHOICE_DENY:    {OptionId: "deny", Kind: acp.PermissionOptionKindRejectOnce, Name: "Deny"},
}

// permissionOptions follows the question's choices; a question with none offers "Allow once" and "Deny".
func permissionOptions(choices []execv1.Choice) ([]acp.PermissionOption, map[string]execv1.Choice) {
	if len(choices) == 0 {
		choices = []execv1.Choice{execv1.Choice_CHOICE_ONCE, execv1.Choice_CHOICE_DENY}
	}
	var opts []acp.PermissionOption
	byID := map[string]execv1.Choice{}
	for _, c := range choices {
		o, ok := options[c]
		if !ok {
			continue
		}
		if _, dup := byID[string(o.OptionId)]; dup {
			continue
		}
		opts = append(opts, o)
		byID[string(o.OptionId)] = c
	}
	return opts, byID
}

// questionContent is what the editor shows: the warning lines, then the preview made visible, then the diff.
// Defends against a preview that looks like another command: hidden characters are escaped and announced.
func questionContent(q *execv1.Question, root string) []acp.ToolCallContent {
	var lines []string
	if w := q.GetWarning(); w != "" {
		lines = append(lines, visible.Visible(w))
	}
	preview := q.GetPreview()
	if q.GetHidden() || visible.HasHidden(strings.ReplaceAll(preview, "\r\n", "\n")) {
		lines = append(lines, visible.Warning)
	}
	if preview != "" {
		lines = append(lines, visible.Visible(preview))
	}
	var out []acp.ToolCallContent
	if len(lines) > 0 {
		out = append(out, acp.ToolContent(acp.TextBlock(strings.Join(lines, "\n"))))
	}
	// The broker sends no diff above its cap (1 MiB of old and new text together, broker/ops_files.go): only the
	// preview then.
	if d := q.GetDiff(); d != nil {
		path := absPath(d.GetPath(), root)
		if d.GetNewFile() {
			out = append(out, acp.ToolDiffContent(path, visible.Visible(d.GetNewText())))
		} else {
			out = append(out, acp.ToolDiffContent(path, visible.Visible(d.GetNewText()), visible.Visible(d.GetOldText())))
		}
	}
	return out
}

// ask sends one question for the right tool call: the call the question names, or its own entry when it is not
// about a call the editor knows (a consent).
func (t *acpTurn) ask(ctx context.Context, q *execv1.Question) execv1.Choice {
	s, uctx := t.s, t.s.srv.base
	id := q.GetCallId()
	title := visible.OneLine(q.GetTitle())
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return execv1.Choice_CHOICE_DENY
	}
	c := t.calls[id]
	entry := q.GetConsent() || id == "" || c == nil || c.ended
	if entry {
		s.mu.Lock()
		s.questions++
		id = fmt.Sprintf("garuda-question-%d", s.questions)
		s.mu.Unlock()
		if title == "" {
			title = "Garuda asks"
		}
		t.order = append(t.order, id)
		t.calls[id] = &callState{title: title}
		s.update(uctx, acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{
			ToolCallId: acp.ToolCallId(id), Title: title, Kind: acp.ToolKindOther, Status: acp.ToolCallStatusPending,
		}})
	} else {
		// The question is about the call the editor shows: it keeps the call's own title (`Write a.txt`); the
		// broker's words (the absolute path) are in the preview and the locations.
		title = c.title
	}
	t.mu.Unlock()
	var locs []acp.ToolCallLocation
	if d := q.GetDiff(); d != nil && d.GetPath() != "" {
		locs = []acp.ToolCallLocation{{Path: absPath(d.GetPath(), s.root)}}
	}

	content := questionContent(q, s.root)
	t.noteDiff(id, content)
	opts, byID := permissionOptions(q.GetChoices())
	req := acp.RequestPermissionRequest{
		SessionId: acp.SessionId(s.id),
		Options:   opts,
		ToolCall: acp.ToolCallUpdate{
			ToolCallId: acp.ToolCallId(id),
			Title:      acp.Ptr(title),
			Content:    content,
			Locations:  locs,
		},
	}
	type answer struct {
		resp acp.RequestPermissionResponse
		err  error
	}
	// The request's context is not the turn's: when its context ends, the SDK tells the editor with
	// $/cancel_request, a method the schema marks UNSTABLE. After a stop the editor answers the question itself
	// (cancelled), and the answer is dropped; the connection's end ends the wait in any case.
	ch := make(chan answer, 1)
	go func() {
		resp, err := s.srv.client().RequestPermission(uctx, req)
		ch <- answer{resp, err}
	}()
	choice := execv1.Choice_CHOICE_DENY
	select {
	case a := <-ch:
		if a.err == nil && a.resp.Outcome.Selected != nil {
			if c, ok := byID[string(a.resp.Outcome.Selected.OptionId)]; ok {
				choice = c
			}
		}
		if a.err != nil {
			s.srv.opts.Log.Debug("request_permission", "session", s.id, "err", a.err)
		}
	case <-ctx.Done():
		// The turn was aborted: deny at once.
	}
	if entry {
		t.mu.Lock()
		if st := t.calls[id]; st != nil && !st.ended && !t.closed {
			st.ended = true
			status, text := acp.ToolCallStatusCompleted, "Allowed."
			if choice == execv1.Choice_CHOICE_DENY {
				status, text = acp.ToolCallStatusFailed, "Denied."
			}
			t.updateCall(uctx, id, status, text)
		}
		t.mu.Unlock()
	}
	return choice
}
