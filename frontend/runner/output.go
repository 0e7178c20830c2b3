package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/visible"
)

// output is the ACP client of the run: it turns the agent's updates into the terminal's lines or JSON events, and
// answers its questions.
type output struct {
	o Options

	mu        sync.Mutex
	session   string
	calls     map[string]*call
	order     []string // call ids as they began
	changed   []string // files Garuda's own edits wrote, in order
	midLine   bool     // the answer's last byte on Stdout was not a newline
	live      string   // the call whose elapsed time the status line shows
	liveShown bool
	asking    bool          // a question waits on the terminal: the status line would erase its line of choices
	cancel    bool          // a cancel was sent
	isClosed  bool          // stdout is closed
	cancelled chan struct{} // closed by the first cancel
	lines     chan string   // the terminal's lines, once a question was asked
	modelOut  sync.Once     // calls Options.Started at the model's first output
	ticker    *time.Ticker
	tickDone  chan struct{}
}

type call struct {
	title, kind string
	started     time.Time
	ended       bool
	text        string // the last text content
	locations   []string
}

func newOutput(o Options) *output {
	w := &output{o: o, calls: map[string]*call{}, cancelled: make(chan struct{})}
	if o.Styled && !o.JSON {
		w.ticker = time.NewTicker(200 * time.Millisecond)
		w.tickDone = make(chan struct{})
		go w.tick(w.ticker.C, w.tickDone)
	}
	return w
}

var _ acp.Client = (*output)(nil)

// event is one JSON line of --json.
type event map[string]any

// stopEvent is --json's last event of every run: why it stopped ("" when no turn ran), its exit code, its session
// and the files it changed.
func stopEvent(reason string, code int, session string, changed []string) event {
	return event{"type": "stop", "stopReason": reason, "exitCode": code, "sessionId": session, "changed": changed}
}

// FailedJSON writes, for --json, a run that failed before its turn: the error event, then the stop event every run
// ends with.
func FailedJSON(w io.Writer, msg string, code int) {
	for _, e := range []event{{"type": "error", "message": msg}, stopEvent("", code, "", []string{})} {
		b, _ := json.Marshal(e)
		w.Write(append(b, '\n'))
	}
}

func (w *output) emit(e event) {
	if w.isClosed {
		return
	}
	b, _ := json.Marshal(e)
	if _, err := w.o.Stdout.Write(append(b, '\n')); err != nil {
		w.isClosed = true
	}
}

func (w *output) begin(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.session = id
	if w.o.JSON {
		w.emit(event{"type": "session", "sessionId": id, "cwd": w.o.Cwd})
	}
}

// answer writes model text to Stdout.
func (w *output) answer(text string) {
	if w.o.JSON {
		w.emit(event{"type": "text", "text": text})
		return
	}
	if text == "" || w.isClosed {
		return
	}
	w.clearLive()
	if _, err := io.WriteString(w.o.Stdout, text); err != nil {
		w.isClosed = true
		return
	}
	w.midLine = !strings.HasSuffix(text, "\n")
}

// started tells Options.Started, once, that the model's output began. SessionUpdate defers it until the output is
// written: garuda run's Started gives the collector back its pace, and the first allocation after that set off a
// collection (a stop of the world, a core of two for its marking) before the first byte had gone out.
func (w *output) started() {
	if w.o.Started != nil {
		w.modelOut.Do(w.o.Started)
	}
}

// side writes a line for the user to Stderr, after ending the answer's line where both go to one terminal.
func (w *output) side(line string) {
	w.clearLive()
	if w.midLine && w.o.Styled {
		io.WriteString(w.o.Stdout, "\n")
		w.midLine = false
	}
	fmt.Fprintln(w.o.Stderr, line)
}

func (w *output) dim(s string) string {
	if w.o.Styled {
		return "\x1b[2m" + s + "\x1b[0m"
	}
	return s
}

// SessionUpdate renders one update of the agent.
func (w *output) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		text := textOf(u.AgentMessageChunk.Content)
		if notice, ok := noticeText(text); ok {
			w.notice(notice)
			return nil
		}
		defer w.started()
		w.answer(text)
	case u.AgentThoughtChunk != nil:
		defer w.started()
		if w.o.Quiet {
			return nil
		}
		text := textOf(u.AgentThoughtChunk.Content)
		if w.o.JSON {
			w.emit(event{"type": "thought", "text": text})
			return nil
		}
		w.clearLive()
		io.WriteString(w.o.Stderr, w.dim(text))
	case u.ToolCall != nil:
		defer w.started()
		tc := u.ToolCall
		id := string(tc.ToolCallId)
		c := &call{title: visible.OneLine(tc.Title), kind: string(tc.Kind), started: time.Now()}
		w.calls[id] = c
		w.order = append(w.order, id)
		c.absorb(tc.Content, tc.Locations)
		if w.o.JSON {
			w.emit(event{"type": "tool_call", "id": id, "title": c.title, "kind": c.kind, "status": string(tc.Status)})
			return nil
		}
		w.side(w.dim("▸ " + c.title))
		w.live = id
		w.drawLive()
	case u.ToolCallUpdate != nil:
		w.toolUpdate(u.ToolCallUpdate)
	case u.Plan != nil:
		if w.o.JSON {
			w.emit(event{"type": "plan", "entries": u.Plan.Entries})
		}
	}
	return nil
}

func (w *output) toolUpdate(tu *acp.SessionToolCallUpdate) {
	id := string(tu.ToolCallId)
	c := w.calls[id]
	if c == nil {
		c = &call{started: time.Now()}
		w.calls[id] = c
		w.order = append(w.order, id)
	}
	if tu.Title != nil {
		c.title = visible.OneLine(*tu.Title)
	}
	if tu.Kind != nil {
		c.kind = string(*tu.Kind)
	}
	c.absorb(tu.Content, tu.Locations)
	status := ""
	if tu.Status != nil {
		status = string(*tu.Status)
	}
	if w.o.JSON {
		e := event{"type": "tool_update", "id": id, "status": status}
		if c.text != "" {
			e["text"] = c.text
		}
		if len(c.locations) > 0 {
			e["locations"] = c.locations
		}
		w.emit(e)
	}
	if status != string(acp.ToolCallStatusCompleted) && status != string(acp.ToolCallStatusFailed) || c.ended {
		return
	}
	c.ended = true
	if status == string(acp.ToolCallStatusCompleted) && c.kind == string(acp.ToolKindEdit) {
		for _, p := range c.locations {
			if !slices.Contains(w.changed, p) {
				w.changed = append(w.changed, p)
			}
		}
	}
	if w.o.JSON {
		return
	}
	mark := "✓"
	if status == string(acp.ToolCallStatusFailed) {
		mark = "✗"
	}
	line := fmt.Sprintf("%s %s (%s)", mark, c.title, elapsed(time.Since(c.started)))
	if short := shortResult(c.text); short != "" {
		line += " — " + short
	}
	if w.live == id {
		w.live = ""
	}
	w.side(line)
}

// absorb keeps the last text and the paths of a call's content.
func (c *call) absorb(content []acp.ToolCallContent, locs []acp.ToolCallLocation) {
	for _, cc := range content {
		switch {
		case cc.Content != nil && cc.Content.Content.Text != nil:
			c.text = cc.Content.Content.Text.Text
		case cc.Diff != nil && !slices.Contains(c.locations, cc.Diff.Path):
			c.locations = append(c.locations, cc.Diff.Path)
		}
	}
	for _, l := range locs {
		if !slices.Contains(c.locations, l.Path) {
			c.locations = append(c.locations, l.Path)
		}
	}
}

func (w *output) notice(text string) {
	if w.o.JSON {
		w.emit(event{"type": "notice", "text": text})
		return
	}
	w.side(text)
}

// note is the run's own line for the user (not the agent's).
func (w *output) note(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notice("Garuda: " + text)
}

// fail reports an error that ends the run.
func (w *output) fail(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	msg = visible.Visible(msg)
	if w.o.JSON {
		w.emit(event{"type": "error", "message": msg})
		return
	}
	w.side("garuda: " + msg)
}

// endLine ends the answer's last line on a terminal.
func (w *output) endLine() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clearLive()
	if w.ticker != nil {
		w.ticker.Stop()
		close(w.tickDone)
		w.ticker = nil
	}
	if w.midLine && !w.o.JSON && !w.isClosed {
		io.WriteString(w.o.Stdout, "\n")
		w.midLine = false
	}
}

// stop writes the end of the run: what changed and how to undo it.
func (w *output) stop(reason string, code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := make([]string, len(w.changed))
	for i, p := range w.changed {
		changed[i] = w.rel(p)
	}
	if w.o.JSON {
		w.emit(stopEvent(reason, code, w.session, changed))
		return
	}
	if w.isClosed {
		return
	}
	if len(changed) > 0 {
		w.side(fmt.Sprintf("Changed: %s\nTo revert the last change: garuda undo --session %s",
			strings.Join(changed, ", "), w.session))
	}
	if reason != "" && reason != string(acp.StopReasonEndTurn) {
		w.side("Garuda: the turn ended: " + strings.ReplaceAll(reason, "_", " "))
	}
}

func (w *output) rel(p string) string {
	if r, err := filepath.Rel(w.o.Cwd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func (w *output) markClosed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.isClosed = true
	w.markCancel()
}

func (w *output) markCancel() {
	if !w.cancel {
		w.cancel = true
		close(w.cancelled)
	}
}

func (w *output) closed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.isClosed
}

// cancelling reports whether a cancel was sent before, and notes that one is now.
func (w *output) cancelling() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.cancel
	w.markCancel()
	return was
}

// The status line: the running call and its elapsed time, on a terminal only, drawn below the last line.

// tick draws the status line at each tick until done closes. It is handed the channels: endLine sets w.ticker to
// nil under the lock, which the loop does not hold between ticks.
func (w *output) tick(ticks <-chan time.Time, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-ticks:
			w.mu.Lock()
			w.drawLive()
			w.mu.Unlock()
		}
	}
}

func (w *output) drawLive() {
	c := w.calls[w.live]
	if w.ticker == nil || c == nil || c.ended || w.midLine || w.asking {
		return
	}
	fmt.Fprintf(w.o.Stderr, "\r\x1b[K%s", w.dim(fmt.Sprintf("  … %s", elapsed(time.Since(c.started)))))
	w.liveShown = true
}

func (w *output) clearLive() {
	if w.liveShown {
		io.WriteString(w.o.Stderr, "\r\x1b[K")
		w.liveShown = false
	}
}

// ReadTextFile and the rest are client capabilities the run does not offer; the agent never calls them.

func (w *output) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (w *output) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (w *output) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (w *output) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (w *output) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (w *output) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (w *output) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

func textOf(b acp.ContentBlock) string {
	if b.Text != nil {
		return b.Text.Text
	}
	return ""
}

// noticeText recognises a notice of the agent: it sends each as one chunk, "\nGaruda: …\n".
func noticeText(chunk string) (string, bool) {
	s, ok := strings.CutPrefix(chunk, "\nGaruda: ")
	if !ok || !strings.HasSuffix(s, "\n") {
		return "", false
	}
	return "Garuda: " + strings.TrimSuffix(s, "\n"), true
}

// shortResult is the first line of a call's result, at most 100 characters.
func shortResult(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = visible.OneLine(line)
	if r := []rune(line); len(r) > 100 {
		line = string(r[:99]) + "…"
	}
	return line
}

func elapsed(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
