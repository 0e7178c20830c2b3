package runner

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// ask sees each question before it goes out as session/request_permission: a flag that covers it answers "allow
// once"; with no terminal the rest are denied; on a terminal they are asked there (RequestPermission). What a
// question is about comes from the broker, which decided it (Question.kind, outside_root, outside_sandbox), not
// from its text: defends against a title worded to look like an edit when it is a command outside the sandbox.
func (w *output) ask(ctx context.Context, sessionID string, q *execv1.Question) (execv1.Choice, bool) {
	flag := coveringFlag(q, w.o.Allow)
	w.mu.Lock()
	defer w.mu.Unlock()
	title := visible.OneLine(q.GetTitle())
	switch {
	case flag != "":
		w.question(q.GetCallId(), title, q, "once", flag)
		return execv1.Choice_CHOICE_ONCE, true
	case w.o.TTY == nil:
		w.question(q.GetCallId(), title, q, "deny", "no terminal to ask on, and no flag allows it"+hint(q))
		return execv1.Choice_CHOICE_DENY, true
	}
	return 0, false
}

// consentWebSearch is the consent kind of the provider's server-side web search (policy.OpWebSearch).
const consentWebSearch = "web_search"

// NormHost returns the spelling of a host that --allow-host matches against the broker's Question.host (the
// spelling network rules match: lower case, no trailing dot, an IP address canonical and unmapped), or an error
// saying why s is no host. A host the broker spells otherwise is simply not matched: the question is denied.
func NormHost(s string) (string, error) {
	h := strings.TrimRight(strings.ToLower(strings.TrimSpace(s)), ".")
	if inner, ok := strings.CutPrefix(h, "["); ok {
		h, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return "", fmt.Errorf("%q is not a host name or IP address", s)
		}
	}
	if a, err := netip.ParseAddr(h); err == nil && a.Zone() == "" {
		return a.Unmap().String(), nil
	}
	bad := h == "" || len(h) > 253 || strings.Contains(h, "..") || strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-.") != ""
	if bad {
		return "", fmt.Errorf("%q is not a host name or IP address (give the host alone: no scheme, port, path or *)", s)
	}
	return h, nil
}

// coveringFlag names the flag that allows q, or "".
func coveringFlag(q *execv1.Question, a Allow) string {
	switch {
	case q.GetOutsideSandbox() || q.GetOutsideRoot():
		if a.OutsideSandbox {
			return "--dangerously-allow-outside-sandbox"
		}
	case q.GetServer() != "":
		if slices.Contains(a.MCP, q.GetServer()) {
			return "--allow-mcp " + visible.OneLine(q.GetServer())
		}
	case q.GetHost() != "":
		if h, err := NormHost(q.GetHost()); err == nil && slices.Contains(a.Hosts, h) {
			return "--allow-host " + h
		}
	case q.GetConsentKind() == consentWebSearch:
		if a.WebSearch {
			return "--allow-web-search"
		}
	case q.GetConsent():
	case q.GetProtected():
		// A git hook, an editor's task, an .envrc: it runs later, as the user, so a person answers (no flag does).
	case q.GetKind() == "write" || q.GetKind() == "edit":
		if a.Edits {
			return "--allow-edits"
		}
	case q.GetKind() == "command":
		if a.Commands {
			return "--allow-commands"
		}
	}
	return ""
}

// hint names the flag that would have allowed q.
func hint(q *execv1.Question) string {
	switch {
	case q.GetOutsideSandbox() || q.GetOutsideRoot():
		return " (--dangerously-allow-outside-sandbox would)"
	case q.GetServer() != "":
		return " (--allow-mcp " + visible.OneLine(q.GetServer()) + " would)"
	case q.GetHost() != "":
		return " (--allow-host " + visible.OneLine(q.GetHost()) + " would)"
	case q.GetConsentKind() == consentWebSearch:
		return " (--allow-web-search would)"
	case q.GetConsent():
		return ""
	case q.GetProtected():
		return " (a protected path, which git, an editor or a tool runs later: no flag allows it; run on a terminal to answer)"
	case q.GetKind() == "write" || q.GetKind() == "edit":
		return " (--allow-edits would)"
	case q.GetKind() == "command":
		return " (--allow-commands would)"
	}
	return ""
}

// question reports a question and its answer.
func (w *output) question(id, title string, q *execv1.Question, answer, by string) {
	if w.o.JSON {
		e := event{"type": "question", "id": id, "title": title, "answer": answer, "by": by}
		if q != nil {
			e["kind"], e["outsideRoot"], e["outsideSandbox"] = q.GetKind(), q.GetOutsideRoot(), q.GetOutsideSandbox()
			if q.GetServer() != "" {
				e["server"] = q.GetServer()
			}
			if q.GetHost() != "" {
				e["host"] = q.GetHost()
			}
			if q.GetConsentKind() != "" {
				e["consentKind"] = q.GetConsentKind()
			}
			if q.GetProtected() {
				e["protected"] = true
			}
		}
		w.emit(e)
		return
	}
	verb := map[string]string{"once": "allowed once", "session": "allowed for this session", "deny": "denied"}[answer]
	w.side(fmt.Sprintf("? %s — %s (%s)", title, verb, by))
}

// RequestPermission asks a question on the terminal: the title, what will be done, the diff, the choices. No
// answer (end of input) is a deny.
func (w *output) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	deny := acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
	title := ""
	if p.ToolCall.Title != nil {
		title = visible.OneLine(*p.ToolCall.Title)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.o.TTY == nil || w.cancel {
		w.question(string(p.ToolCall.ToolCallId), title, nil, "deny", "no terminal to ask on")
		return deny, nil
	}
	w.clearLive()
	if w.midLine && w.o.Styled {
		fmt.Fprintln(w.o.Stdout)
		w.midLine = false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n? %s\n", title)
	for _, c := range p.ToolCall.Content {
		switch {
		case c.Content != nil && c.Content.Content.Text != nil:
			for line := range strings.SplitSeq(c.Content.Content.Text.Text, "\n") {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		case c.Diff != nil:
			b.WriteString(renderDiff(c.Diff))
		}
	}
	keys := make([]string, len(p.Options))
	for i, o := range p.Options {
		keys[i] = fmt.Sprintf("[%d] %s", i+1, o.Name)
	}
	lines := w.ttyLines()
	w.asking = true
	defer func() { w.asking = false }()
	for range 3 {
		fmt.Fprintf(w.o.TTY, "%s  %s > ", b.String(), strings.Join(keys, "  "))
		b.Reset()
		// The lock is let go while the user thinks: a Ctrl-C must still cancel the turn.
		w.mu.Unlock()
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
		case <-w.cancelled:
		}
		w.mu.Lock()
		if !ok {
			break
		}
		if o, found := pick(p.Options, strings.TrimSpace(line)); found {
			w.question(string(p.ToolCall.ToolCallId), title, nil, string(o.OptionId), "terminal")
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
				Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
		}
		fmt.Fprintf(w.o.TTY, "  answer with a number from 1 to %d\n", len(p.Options))
	}
	fmt.Fprintln(w.o.TTY)
	w.question(string(p.ToolCall.ToolCallId), title, nil, "deny", "terminal: no answer")
	return deny, nil
}

// ttyLines starts, once, the reader of the terminal's lines; the channel closes at the terminal's end of input.
func (w *output) ttyLines() <-chan string {
	if w.lines == nil {
		ch := make(chan string)
		w.lines = ch
		go func() {
			defer close(ch)
			in := bufio.NewScanner(w.o.TTY)
			for in.Scan() {
				ch <- in.Text()
			}
		}()
	}
	return w.lines
}

// pick finds the option an answer names: its number, or the first letter of its name.
func pick(opts []acp.PermissionOption, ans string) (acp.PermissionOption, bool) {
	for i, o := range opts {
		if ans == fmt.Sprint(i+1) || len(ans) == 1 && strings.EqualFold(ans, o.Name[:1]) && uniqueInitial(opts, ans) {
			return o, true
		}
	}
	return acp.PermissionOption{}, false
}

func uniqueInitial(opts []acp.PermissionOption, letter string) bool {
	n := 0
	for _, o := range opts {
		if strings.EqualFold(o.Name[:1], letter) {
			n++
		}
	}
	return n == 1
}

// renderDiff shows a change as the lines that differ, at most 40 of each side.
func renderDiff(d *acp.ToolCallContentDiff) string {
	old := ""
	if d.OldText != nil {
		old = *d.OldText
	}
	a, b := strings.Split(old, "\n"), strings.Split(d.NewText, "\n")
	if old == "" {
		a = nil
	}
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var s strings.Builder
	fmt.Fprintf(&s, "  --- %s (line %d)\n", visible.OneLine(d.Path), pre+1)
	side := func(mark string, lines []string) {
		for i, l := range lines {
			if i == 40 {
				fmt.Fprintf(&s, "  %s … %d more lines\n", mark, len(lines)-40)
				break
			}
			fmt.Fprintf(&s, "  %s %s\n", mark, l)
		}
	}
	side("-", a[pre:len(a)-suf])
	side("+", b[pre:len(b)-suf])
	return s.String()
}
