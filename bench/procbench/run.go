package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	"github.com/garuda-dev/garuda/internal/testproc"
)

// sample is what one run measured.
type sample struct {
	spawnInit      time.Duration // spawn until the initialize response is read
	newSession     time.Duration // session/new sent until answered
	turn           time.Duration // session/prompt sent until answered (2 model requests + echo hello)
	cancelGone     time.Duration // session/cancel sent until every process of the sleep is gone
	cancelAnswered time.Duration // session/cancel sent until the prompt is answered "cancelled"
	memFront       int64         // VmHWM of garuda acp, bytes
	memBroker      int64         // VmHWM of garuda-exec, bytes
	anon           int64         // RssAnon of both at the same moment, bytes
	exit           time.Duration // stdin closed until garuda and all its descendants are gone
	questions      int           // permission questions the agent asked (none expected in build mode)
	watched        int           // processes of the sleep watched after the cancel
	otherInit      time.Duration // -compare: the other agent's spawn until its initialize response is read
}

// runner spawns the binaries; garuda and exec are absolute, symlink-free paths.
type runner struct {
	garuda, exec string
	tmp          string        // TMPDIR of every run
	timeout      time.Duration // for each step
}

// pollEvery is how often the /proc watches look; it bounds the resolution of the process figures.
const pollEvery = 200 * time.Microsecond

// tail keeps the last bytes written to it (garuda's stderr, for error reports).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 8<<10 {
		t.buf = t.buf[len(t.buf)-8<<10:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// waitFor polls cond until it holds, and returns the time it was first seen to hold.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return time.Now(), nil
		}
		if err := ctx.Err(); err != nil {
			return time.Time{}, fmt.Errorf("waiting for %s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("waiting for %s: not within %s", what, timeout)
		}
		time.Sleep(pollEvery)
	}
}

// once runs garuda acp through one editor session and measures it. idx makes the sleep's marker unique.
func (r *runner) once(ctx context.Context, idx int) (s sample, err error) {
	w, err := newWorkspace("garuda-procbench-", r.tmp)
	if err != nil {
		return s, err
	}
	defer w.remove()
	root := filepath.Join(w.base, "project")
	if err := os.Mkdir(root, 0o700); err != nil {
		return s, fmt.Errorf("make %s: %w", root, err)
	}

	// The marker makes the sleep's processes ours alone to watch in /proc.
	marker := fmt.Sprintf("60.%d%04d", os.Getpid(), idx)
	sleepInput, _ := json.Marshal(map[string]string{"command": "sleep " + marker})
	fake, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{
		{ToolCalls: []fakeprovider.ToolCall{{ID: "toolu_echo", Name: "bash", Input: `{"command":"echo hello"}`}}},
		{Text: "done"},
		{ToolCalls: []fakeprovider.ToolCall{{ID: "toolu_sleep", Name: "bash", Input: string(sleepInput)}}},
	})
	if err != nil {
		return s, err
	}
	defer fake.Close()
	if err := w.writeModels(fake.URL, 200000, 4096); err != nil {
		return s, err
	}

	cmd := exec.Command(r.garuda, "acp")
	cmd.Dir = root
	cmd.Env = w.env()
	// Guards against leaving garuda running when procbench itself dies (the broker dies with garuda).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr := &tail{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return s, fmt.Errorf("stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return s, fmt.Errorf("stdout pipe: %w", err)
	}
	ed := newEditor(stdin)
	type exitInfo struct {
		err error
		at  time.Time
	}
	exited := make(chan exitInfo, 1)

	t0 := time.Now()
	if err := testproc.StartBelow(cmd); err != nil {
		return s, fmt.Errorf("start %s acp: %w", r.garuda, err)
	}
	gpid := cmd.Process.Pid
	go func() {
		ed.read(stdout)
		err := cmd.Wait()
		exited <- exitInfo{err, time.Now()}
	}()
	var tracked []proc // garuda's descendants, killed by pid if the run fails
	var gone bool
	defer func() {
		if gone {
			return
		}
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		for _, p := range append(tracked, descendants(gpid)...) {
			if p.alive() {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		if err != nil {
			err = fmt.Errorf("%w\ngaruda's stderr (last lines):\n%s", err, stderr.String())
		}
	}()

	// (1) spawn → initialize answered. The request waits in the pipe while garuda starts.
	ch, err := ed.send("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	if err != nil {
		return s, err
	}
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	at, err := await(ctx, ch, "initialize", r.timeout, &init)
	if err != nil {
		return s, err
	}
	if init.ProtocolVersion != 1 {
		return s, fmt.Errorf("initialize: protocolVersion %d, want 1", init.ProtocolVersion)
	}
	s.spawnInit = at.Sub(t0)

	var broker proc
	if _, err := waitFor(ctx, r.timeout, "garuda-exec as a child of garuda", func() bool {
		var ok bool
		broker, ok = childWithExe(gpid, r.exec)
		return ok
	}); err != nil {
		return s, err
	}
	tracked = append(tracked, broker)

	// (2) session/new.
	t1 := time.Now()
	if ch, err = ed.send("session/new", map[string]any{"cwd": root, "mcpServers": []any{}}); err != nil {
		return s, err
	}
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	if at, err = await(ctx, ch, "session/new", r.timeout, &ns); err != nil {
		return s, err
	}
	if ns.SessionID == "" {
		return s, fmt.Errorf("session/new: no sessionId in the answer")
	}
	s.newSession = at.Sub(t1)

	// (3) the full turn: tool call bash `echo hello`, run in the sandbox, then the final answer.
	prompt := func(text string) (<-chan reply, error) {
		return ed.send("session/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	}
	var res struct {
		StopReason string `json:"stopReason"`
	}
	t2 := time.Now()
	if ch, err = prompt("say hello"); err != nil {
		return s, err
	}
	if at, err = await(ctx, ch, "session/prompt (echo hello)", r.timeout, &res); err != nil {
		return s, err
	}
	s.turn = at.Sub(t2)
	if res.StopReason != "end_turn" {
		return s, fmt.Errorf("session/prompt (echo hello): stopReason %q, want end_turn", res.StopReason)
	}
	if n := len(fake.Requests()); n != 2 {
		return s, fmt.Errorf("session/prompt (echo hello): %d model requests, want 2", n)
	}
	updates, _ := ed.snapshot()
	if !toolCompleted(updates, "toolu_echo", "hello") {
		return s, fmt.Errorf("session/prompt (echo hello): no completed tool call with the output hello among %d updates", len(updates))
	}

	// (4) cancel of a running sleep until every process of the command is gone.
	if ch, err = prompt("sleep"); err != nil {
		return s, err
	}
	var watched []proc
	if _, err := waitFor(ctx, r.timeout, "sleep "+marker+" to run", func() bool {
		watched = withMarker(marker)
		for _, p := range watched {
			if comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "comm")); strings.TrimSpace(string(comm)) == "sleep" {
				return true
			}
		}
		return false
	}); err != nil {
		return s, err
	}
	// Every process under the broker at this point belongs to the command (the echo has ended): the
	// sandbox's helper, the shell and the sleep, whether their command lines carry the marker or not.
	watched = append(watched, descendants(broker.pid)...)
	watched = unique(watched)
	tracked = append(tracked, watched...)
	s.watched = len(watched)
	t3 := time.Now()
	if err := ed.notify("session/cancel", map[string]any{"sessionId": ns.SessionID}); err != nil {
		return s, err
	}
	goneAt, err := waitFor(ctx, r.timeout, "every process of sleep "+marker+" to end after the cancel", func() bool {
		for _, p := range watched {
			if p.alive() {
				return false
			}
		}
		return true
	})
	if err != nil {
		return s, err
	}
	s.cancelGone = goneAt.Sub(t3)
	if at, err = await(ctx, ch, "session/prompt (sleep, cancelled)", r.timeout, &res); err != nil {
		return s, err
	}
	s.cancelAnswered = at.Sub(t3)
	if res.StopReason != "cancelled" {
		return s, fmt.Errorf("session/prompt (sleep): stopReason %q after session/cancel, want cancelled", res.StopReason)
	}
	if left := withMarker(marker); len(left) > 0 {
		return s, fmt.Errorf("after the cancel, processes of sleep %s remain: %v", marker, left)
	}

	// (5) peak memory of both processes, just before stdin closes.
	if s.memFront, err = vmHWM(gpid); err != nil {
		return s, err
	}
	if s.memBroker, err = vmHWM(broker.pid); err != nil {
		return s, err
	}
	for _, pid := range []int{gpid, broker.pid} {
		a, err := rssAnon(pid)
		if err != nil {
			return s, err
		}
		s.anon += a
	}
	_, s.questions = ed.snapshot()
	if err := ed.err(); err != nil {
		return s, err
	}

	// (6) stdin closed → garuda exited and none of its processes remain.
	tracked = append(tracked, descendants(gpid)...)
	t4 := time.Now()
	stdin.Close()
	var ex exitInfo
	select {
	case ex = <-exited:
	case <-time.After(r.timeout):
		return s, fmt.Errorf("garuda acp still runs %s after its stdin closed", r.timeout)
	case <-ctx.Done():
		return s, fmt.Errorf("waiting for garuda to exit: %w", ctx.Err())
	}
	gone = true
	if ex.err != nil {
		return s, fmt.Errorf("garuda acp after stdin closed: %w\nstderr:\n%s", ex.err, stderr.String())
	}
	lastAt, err := waitFor(ctx, r.timeout, "garuda's processes to end after stdin closed", func() bool {
		for _, p := range tracked {
			if p.alive() {
				return false
			}
		}
		return true
	})
	if err != nil {
		for _, p := range tracked {
			if p.alive() {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		return s, err
	}
	end := ex.at
	if lastAt.After(end) {
		end = lastAt
	}
	s.exit = end.Sub(t4)
	return s, nil
}

// toolCompleted reports whether the updates hold a tool_call_update (or tool_call) of id with status
// completed whose content mentions want.
func toolCompleted(updates []json.RawMessage, id, want string) bool {
	for _, raw := range updates {
		var u sessionUpdate
		if json.Unmarshal(raw, &u) != nil || u.Update.ToolCallID != id || u.Update.Status != "completed" {
			continue
		}
		if strings.Contains(string(u.Update.Content), want) {
			return true
		}
	}
	return false
}

// unique drops repeated processes, keeping the first of each.
func unique(ps []proc) []proc {
	seen := map[proc]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
