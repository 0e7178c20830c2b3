package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Soak bounds: what counts as growth after the warm-up.
const (
	heapGrowth    = 1.20 // the last quarter's median live heap over the first quarter's, per process
	fdSlack       = 3    // descriptors above the warm-up's count at rest
	goroutineSlak = 10   // broker goroutines above the warm-up's count at rest (gRPC keeps a few on its own clock)
	cancelEvery   = 5    // every fifth turn of a session is a command that is cancelled while it runs
	reopenEvery   = 24   // every 24th turn of a session is followed by session/close and session/load
)

// soakConfig is what -soak runs.
type soakConfig struct {
	sessions int
	length   time.Duration
	// replaceAfter is how many turns a session lives before it is closed and a new one takes its place in the same
	// project folder, as a user starts a new session now and then (0: never). The first sessions are replaced after
	// a share of it each (session i of n after (i+1)/n of it), so that from the start the sessions' lengths are
	// spread evenly between 0 and replaceAfter and stay so: what grows with a session's length then levels off,
	// and what grows still is kept across sessions or per turn.
	replaceAfter int
}

// firstLife is how many turns session i of n lives before its first replacement.
func (c soakConfig) firstLife(i int) int {
	return max(c.replaceAfter*(i+1)/c.sessions, 1)
}

// sampleEvery is how often both processes are looked at: 40 times a run, between once a second and every 5 s.
func (c soakConfig) sampleEvery() time.Duration {
	return min(max(c.length/40, time.Second), 5*time.Second)
}

// soakSample is one look at both processes.
type soakSample struct {
	at                time.Duration
	pssFront, pssExec int64
	// anonFront and anonExec are the anonymous part of the PSS (Pss_Anon): heap, stacks, runtime. The rest is file
	// pages, mostly the binary's code, which grows as a long run reaches more of it; a leak grows the anonymous part.
	anonFront, anonExec int64
	fdsFront, fdsExec   int
	children            int // processes under the broker (commands running)
	goroutines          int // the broker's
}

// rest is the figures at rest: every session between turns.
type rest struct {
	fdsFront, fdsExec, goroutines, children int
}

// soakResult is what a soak measured.
type soakResult struct {
	turns, cancels, failed int
	reopens                int
	replaced               int            // sessions closed for good and replaced by a new one
	tools                  map[string]int // tool calls by kind and final status
	why                    []string       // what the first failed tool calls said
	samples                []soakSample
	warm, end              rest
	left                   []proc // processes alive after garuda and the broker exited
	// heapFront and heapExec are the live heap of each process every 5 s (soakprof): what a leak grows. PSS also
	// counts memory the Go runtime keeps after a peak and code paged in, which level off but not within minutes.
	heapFront, heapExec []int64
}

var turnRE = regexp.MustCompile(`soak (turn|sleep) (\d+) of session (\d+)`)
var toolIDRE = regexp.MustCompile(`"tool_use_id":"(r|e|b|s)-(\d+)-(\d+)"`)

// soakResponder answers each model request from the conversation it carries: a turn reads (read_file and glob),
// edits (edit_file, which asks and is answered "once"), runs a sandboxed command and ends; a sleep turn runs a
// command that the soak cancels; anything else (a compaction) gets a summary.
func soakResponder(marker string) func(body []byte) fakeprovider.Turn {
	return func(body []byte) fakeprovider.Turn {
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(body, &req)
		if strings.Contains(string(body), "You summarise a coding session") { // the agent compacting its history
			return fakeprovider.Turn{Text: "Summary: the soak edited notes.txt and ran commands."}
		}
		if len(req.Messages) == 0 {
			return fakeprovider.Turn{Text: "nothing to do"}
		}
		// The last message may hold more than the newest step: the agent sends consecutive user messages as one (a
		// cancelled call's result and the next prompt; after a compaction, the kept prompts and the summary). What
		// is answered is what comes last in it: a tool result, or a prompt.
		last := string(req.Messages[len(req.Messages)-1])
		tm, pm := lastMatch(toolIDRE, last), lastMatch(turnRE, last)
		if tm != nil && (pm == nil || tm[0] > pm[0]) {
			m := submatches(last, tm)
			k, sess := m[2], m[3]
			switch m[1] {
			case "r":
				n, _ := strconv.Atoi(k)
				in, _ := json.Marshal(map[string]string{"path": "notes.txt", "old_string": fmt.Sprintf("n=%d\n", n-1),
					"new_string": fmt.Sprintf("n=%d\n", n)})
				return fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{{ID: "e-" + k + "-" + sess, Name: "edit_file", Input: string(in)}}}
			case "e":
				return fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{{ID: "b-" + k + "-" + sess, Name: "bash",
					Input: `{"command":"wc -c notes.txt && ls -la | head -5"}`}}}
			}
			return fakeprovider.Turn{Text: "done with turn " + k}
		}
		if pm != nil {
			m := submatches(last, pm)
			k, sess := m[2], m[3]
			if m[1] == "sleep" {
				n, _ := strconv.Atoi(sess)
				in, _ := json.Marshal(map[string]string{"command": "sleep " + sleepArg(marker, n)})
				return fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{{ID: "s-" + k + "-" + sess, Name: "bash", Input: string(in)}}}
			}
			return fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{
				{ID: "r-" + k + "-" + sess, Name: "read_file", Input: `{"path":"notes.txt"}`},
				{ID: "g-" + k + "-" + sess, Name: "glob", Input: `{"pattern":"**/*.txt"}`},
			}}
		}
		return fakeprovider.Turn{Text: "Summary: the soak edited notes.txt and ran commands."}
	}
}

// lastMatch is the index pairs of re's last match in s (nil when none).
func lastMatch(re *regexp.Regexp, s string) []int {
	all := re.FindAllStringSubmatchIndex(s, -1)
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}

// submatches turns a match's index pairs into its strings.
func submatches(s string, idx []int) []string {
	out := make([]string, len(idx)/2)
	for i := range out {
		if idx[2*i] >= 0 {
			out[i] = s[idx[2*i]:idx[2*i+1]]
		}
	}
	return out
}

// sleepArg is the number the sleep of session i sleeps, unique to this soak and the session so that its processes
// can be found in /proc: 61.<pid><i>.
func sleepArg(marker string, i int) string { return fmt.Sprintf("%s%03d", marker, i) }

// soak runs cfg.sessions ACP sessions in one garuda acp against one garuda-exec serving a socket (so that the soak
// can ask the broker for its goroutines through Hello), for cfg.length, and measures both processes.
func (r *runner) soak(ctx context.Context, cfg soakConfig) (res soakResult, err error) {
	w, err := newWorkspace("garuda-soak-", "")
	if err != nil {
		return res, err
	}
	defer w.remove()
	base := w.base
	marker := fmt.Sprintf("61.%d", os.Getpid())
	fake, err := fakeprovider.Serve("127.0.0.1:0", nil)
	if err != nil {
		return res, err
	}
	defer fake.Close()
	fake.Respond(soakResponder(marker))
	// A small context window makes the agent compact, so a session's history stays bounded as a real one does.
	if err := w.writeModels(fake.URL, 12000, 1024); err != nil {
		return res, err
	}
	env := w.env()
	// A soakprof build (make soak) writes its live heap there; heap profiles too, if the caller names the folder.
	prof := os.Getenv("SOAKPROF_DIR")
	if prof == "" {
		prof = filepath.Join(base, "prof")
		if err := os.Mkdir(prof, 0o700); err != nil {
			return res, err
		}
	}
	env = append(env, "SOAKPROF_DIR="+prof)

	sock := filepath.Join(base, "run", "exec.sock")
	bcmd := exec.Command(r.exec, "serve", "--listen", sock)
	bcmd.Env, bcmd.Stderr = env, &tail{}
	bcmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := bcmd.Start(); err != nil {
		return res, fmt.Errorf("start garuda-exec serve: %w", err)
	}
	bexited := make(chan error, 1)
	go func() { bexited <- bcmd.Wait() }()
	bst, _ := readStat(bcmd.Process.Pid)
	broker := proc{pid: bcmd.Process.Pid, start: bst.start}
	defer func() {
		if broker.alive() {
			bcmd.Process.Kill()
			<-bexited
		}
	}()
	if _, err := waitFor(ctx, r.timeout, "the broker's socket", func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		return res, err
	}
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return res, err
	}
	defer cc.Close()
	bc := execv1.NewExecServiceClient(cc)

	var mu sync.Mutex
	gcmd := exec.Command(r.garuda, "acp", "--broker", "unix://"+sock)
	gcmd.Dir, gcmd.Env = base, env
	gcmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr := &tail{}
	gcmd.Stderr = stderr
	stdin, _ := gcmd.StdinPipe()
	stdout, _ := gcmd.StdoutPipe()
	ed := newEditor(stdin)
	tools := map[string]int{}        // "edit_file completed": tool calls of each kind by their last status
	loading := map[string]bool{}     // sessions whose load is replaying
	sleepSaid := map[string]string{} // what each session's last sleep call said when it ended
	ed.onUpdate = func(params json.RawMessage) {
		var u sessionUpdate
		err := json.Unmarshal(params, &u)
		mu.Lock()
		replay := loading[u.SessionID]
		mu.Unlock()
		if replay || err != nil || u.Update.Kind != "tool_call_update" {
			return // a load's replay repeats what was counted when it happened
		}
		if u.Update.Status != "completed" && u.Update.Status != "failed" {
			return
		}
		name := map[byte]string{'r': "read_file", 'g': "glob", 'e': "edit_file", 'b': "bash", 's': "sleep (cancelled)"}[u.Update.ToolCallID[0]]
		mu.Lock()
		tools[name+" "+u.Update.Status]++
		if name == "sleep (cancelled)" {
			sleepSaid[u.SessionID] = fmt.Sprintf("%s %.300s", u.Update.Status, u.Update.Content)
		}
		if u.Update.Status == "failed" && name != "sleep (cancelled)" && len(res.why) < 5 {
			res.why = append(res.why, fmt.Sprintf("%s: %.300s", name, u.Update.Content))
		}
		mu.Unlock()
	}
	if err := gcmd.Start(); err != nil {
		return res, fmt.Errorf("start garuda acp: %w", err)
	}
	gexited := make(chan error, 1)
	go func() {
		ed.read(stdout)
		gexited <- gcmd.Wait()
	}()
	gst, _ := readStat(gcmd.Process.Pid)
	front := proc{pid: gcmd.Process.Pid, start: gst.start}
	defer func() {
		if front.alive() {
			gcmd.Process.Kill()
			<-gexited
		}
		if err != nil {
			err = fmt.Errorf("%w\ngaruda's stderr (last lines):\n%s", err, stderr.String())
		}
	}()
	ch, err := ed.send("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	if err != nil {
		return res, err
	}
	if _, err := await(ctx, ch, "initialize", r.timeout, nil); err != nil {
		return res, err
	}

	defer func() {
		mu.Lock()
		defer mu.Unlock()
		res.tools = tools
	}()
	type sess struct {
		id, root string
		turn     int
		life     int  // turns before it is replaced (0: never)
		reloaded bool // loaded or new since its last turn: no command has run in it since
	}
	// newSession opens a session in root, whose notes.txt starts the edit chain again.
	newSession := func(root string) (string, error) {
		if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("n=0\n"), 0o644); err != nil {
			return "", err
		}
		ch, err := ed.send("session/new", map[string]any{"cwd": root, "mcpServers": []any{}})
		if err != nil {
			return "", err
		}
		var ns struct {
			SessionID string `json:"sessionId"`
		}
		if _, err := await(ctx, ch, "session/new", r.timeout, &ns); err != nil {
			return "", err
		}
		return ns.SessionID, nil
	}
	sessions := make([]*sess, cfg.sessions)
	for i := range sessions {
		root := filepath.Join(base, "projects", strconv.Itoa(i))
		os.MkdirAll(root, 0o755)
		id, err := newSession(root)
		if err != nil {
			return res, err
		}
		sessions[i] = &sess{id: id, root: root}
		if cfg.replaceAfter > 0 {
			sessions[i].life = cfg.firstLife(i)
		}
	}

	// replace closes session i for good and opens a new one in its project folder.
	replace := func(i int) error {
		s := sessions[i]
		ch, err := ed.send("session/close", map[string]any{"sessionId": s.id})
		if err != nil {
			return err
		}
		if _, err := await(ctx, ch, "session/close", r.timeout, nil); err != nil {
			return err
		}
		id, err := newSession(s.root)
		if err != nil {
			return err
		}
		s.id, s.turn, s.life, s.reloaded = id, 0, cfg.replaceAfter, true
		mu.Lock()
		res.replaced++
		mu.Unlock()
		return nil
	}

	// reopen closes a session and loads it again: its broker session is freed, its file replayed.
	reopen := func(id, root string) error {
		ch, err := ed.send("session/close", map[string]any{"sessionId": id})
		if err != nil {
			return err
		}
		if _, err := await(ctx, ch, "session/close", r.timeout, nil); err != nil {
			return err
		}
		mu.Lock()
		loading[id] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(loading, id)
			res.reopens++
			mu.Unlock()
		}()
		ch, err = ed.send("session/load", map[string]any{"sessionId": id, "cwd": root, "mcpServers": []any{}})
		if err != nil {
			return err
		}
		_, err = await(ctx, ch, "session/load", 2*r.timeout, nil)
		return err
	}

	// turn runs one turn of session i: a normal one, or every cancelEvery-th a command cancelled while it runs.
	turn := func(i int) error {
		s := sessions[i]
		s.turn++
		sleep := s.turn%cancelEvery == 0
		kind, k := "turn", s.turn-s.turn/cancelEvery // normal turns are numbered 1, 2, ... for the edit chain
		if sleep {
			kind, k = "sleep", s.turn
		}
		text := fmt.Sprintf("soak %s %d of session %d", kind, k, i)
		ch, err := ed.send("session/prompt", map[string]any{"sessionId": s.id, "prompt": []any{map[string]any{"type": "text", "text": text}}})
		if err != nil {
			return err
		}
		seen := true // the sleep was seen running before the cancel
		if sleep {
			// Cancel once the session's sleep runs (looked for every 50 ms: /proc is read whole each time).
			for deadline := time.Now().Add(r.timeout); time.Now().Before(deadline) && len(withMarker(sleepArg(marker, i))) == 0; {
				time.Sleep(50 * time.Millisecond)
			}
			seen = len(withMarker(sleepArg(marker, i))) > 0
			if err := ed.notify("session/cancel", map[string]any{"sessionId": s.id}); err != nil {
				return err
			}
		}
		var pr struct {
			StopReason string `json:"stopReason"`
		}
		if _, err := await(ctx, ch, "session/prompt ("+text+")", 2*r.timeout, &pr); err != nil {
			return err
		}
		s.reloaded = s.turn%reopenEvery == 0
		if s.life > 0 && s.turn >= s.life {
			if err := replace(i); err != nil {
				return err
			}
		} else if s.reloaded {
			if err := reopen(s.id, s.root); err != nil {
				return err
			}
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case sleep && pr.StopReason == "cancelled":
			res.cancels++
		case !sleep && pr.StopReason == "end_turn":
			res.turns++
		default:
			res.failed++
			if len(res.why) < 5 {
				res.why = append(res.why, fmt.Sprintf("%q ended %q (sleep seen running: %v); its sleep call: %s", text,
					pr.StopReason, seen, sleepSaid[s.id]))
			}
		}
		return nil
	}

	// atRest counts descriptors, goroutines and commands while no turn runs.
	atRest := func() (rest, error) {
		var rs rest
		var err error
		if rs.fdsFront, err = fdCount(front.pid, prof); err != nil {
			return rs, err
		}
		if rs.fdsExec, err = fdCount(broker.pid, prof); err != nil {
			return rs, err
		}
		h, err := bc.Hello(ctx, &execv1.HelloRequest{})
		if err != nil {
			return rs, fmt.Errorf("Hello: %w", err)
		}
		rs.goroutines, rs.children = int(h.Goroutines), len(descendants(broker.pid))
		return rs, nil
	}
	// phase runs every session's turns until the deadline, then waits for the turns in flight. A session just
	// loaded again runs one more turn: at rest every session has run a command since its load, so that the
	// descriptors it then holds (its guard's inotify, its network's holder) are counted alike at every rest.
	phase := func(until time.Time) error {
		var wg sync.WaitGroup
		errs := make([]error, len(sessions))
		for i := range sessions {
			wg.Go(func() {
				for (time.Now().Before(until) || sessions[i].reloaded) && ctx.Err() == nil {
					if err := turn(i); err != nil {
						errs[i] = err
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}

	start := time.Now()
	warmup := max(cfg.length/10, 20*time.Second)
	if err := phase(start.Add(warmup)); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	time.Sleep(time.Second) // the broker ends a cancelled command's processes after its answer
	if res.warm, err = atRest(); err != nil {
		return res, err
	}

	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(cfg.sampleEvery())
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			s := soakSample{at: time.Since(start)}
			s.pssFront, _ = pss(front.pid)
			s.pssExec, _ = pss(broker.pid)
			s.anonFront, _ = pssAnon(front.pid)
			s.anonExec, _ = pssAnon(broker.pid)
			s.fdsFront, _ = fdCount(front.pid, prof)
			s.fdsExec, _ = fdCount(broker.pid, prof)
			s.children = len(descendants(broker.pid))
			if h, err := bc.Hello(ctx, &execv1.HelloRequest{}); err == nil {
				s.goroutines = int(h.Goroutines)
			}
			mu.Lock()
			res.samples = append(res.samples, s)
			mu.Unlock()
		}
	}()
	err = phase(start.Add(cfg.length))
	close(done)
	<-sampled
	if err != nil {
		return res, err
	}
	time.Sleep(time.Second)
	if res.end, err = atRest(); err != nil {
		return res, err
	}
	if err := ed.err(); err != nil {
		return res, err
	}

	// garuda's stdin closed: it exits; then the broker is told to stop. Nothing of either may remain.
	tracked := append(descendants(front.pid), descendants(broker.pid)...)
	stdin.Close()
	select {
	case err := <-gexited:
		if err != nil {
			return res, fmt.Errorf("garuda acp after stdin closed: %w", err)
		}
	case <-time.After(r.timeout):
		return res, fmt.Errorf("garuda acp still runs %s after its stdin closed", r.timeout)
	}
	bcmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-bexited:
	case <-time.After(r.timeout):
		return res, fmt.Errorf("garuda-exec still runs %s after SIGTERM", r.timeout)
	}
	time.Sleep(500 * time.Millisecond)
	for _, p := range append(tracked, withMarker(marker)...) {
		if p.alive() {
			res.left = append(res.left, p)
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	if res.heapFront, err = readHeap(filepath.Join(prof, "garuda.heap")); err != nil {
		return res, err
	}
	if res.heapExec, err = readHeap(filepath.Join(prof, "garuda-exec.heap")); err != nil {
		return res, err
	}
	return res, nil
}

// readHeap reads the live-heap samples a soakprof build wrote ("<ms> <bytes>" lines).
func readHeap(path string) ([]int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no live-heap samples in %s: build both binaries with -tags soakprof (make soak does)", path)
	}
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// check says what grew past its bound, one line each; none means the soak passed.
func (res soakResult) check() []string {
	var bad []string
	if res.failed > 0 {
		bad = append(bad, fmt.Sprintf("%d turns did not end as they should (end_turn, or cancelled for a cancel)", res.failed))
	}
	for _, k := range []string{"read_file failed", "glob failed", "edit_file failed", "bash failed"} {
		if res.tools[k] > 0 {
			bad = append(bad, fmt.Sprintf("%d tool calls: %s", res.tools[k], k))
		}
	}
	for _, w := range res.why {
		bad = append(bad, "  "+w)
	}
	q := len(res.samples) / 4
	if q == 0 {
		return append(bad, fmt.Sprintf("%d samples: the run is too short to compare quarters", len(res.samples)))
	}
	for _, h := range []struct {
		name    string
		samples []int64
	}{{"garuda acp", res.heapFront}, {"garuda-exec", res.heapExec}} {
		first, last, ok := quarters(h.samples)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: %d live-heap samples, too few to compare quarters", h.name, len(h.samples)))
		} else if float64(last) > float64(first)*heapGrowth {
			bad = append(bad, fmt.Sprintf("%s live heap (median) grew from %.1f MiB (first quarter) to %.1f MiB (last quarter), more than %.0f%%",
				h.name, mib(first), mib(last), (heapGrowth-1)*100))
		}
	}
	if res.end.fdsFront > res.warm.fdsFront+fdSlack {
		bad = append(bad, fmt.Sprintf("garuda acp descriptors at rest: %d after warm-up, %d at the end", res.warm.fdsFront, res.end.fdsFront))
	}
	if res.end.fdsExec > res.warm.fdsExec+fdSlack {
		bad = append(bad, fmt.Sprintf("garuda-exec descriptors at rest: %d after warm-up, %d at the end", res.warm.fdsExec, res.end.fdsExec))
	}
	if res.end.goroutines > res.warm.goroutines+goroutineSlak {
		bad = append(bad, fmt.Sprintf("garuda-exec goroutines at rest: %d after warm-up, %d at the end", res.warm.goroutines, res.end.goroutines))
	}
	if res.end.children > 0 {
		bad = append(bad, fmt.Sprintf("%d commands still run under the broker at rest", res.end.children))
	}
	if len(res.left) > 0 {
		bad = append(bad, fmt.Sprintf("processes left after both exited: %v", res.left))
	}
	return bad
}

// report prints the figures of a soak.
func (res soakResult) report(w io.Writer, cfg soakConfig) {
	fmt.Fprintf(w, "soak: %d sessions for %s: %d turns, %d cancels, %d close+load, %d failed, %d samples every %s\n",
		cfg.sessions, cfg.length, res.turns, res.cancels, res.reopens, res.failed, len(res.samples), cfg.sampleEvery())
	if cfg.replaceAfter > 0 {
		fmt.Fprintf(w, "  sessions replaced by new ones (each after %d turns): %d\n", cfg.replaceAfter, res.replaced)
	} else {
		fmt.Fprintf(w, "  sessions never replaced: each grew for the whole run\n")
	}
	var kinds []string
	for k := range res.tools {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "  tool calls %-20s %d\n", k, res.tools[k])
	}
	q := max(len(res.samples)/4, 1)
	if len(res.samples) > 0 {
		for _, p := range memoryFigures {
			first, last := meanOf(res.samples[:q], p.get), meanOf(res.samples[len(res.samples)-q:], p.get)
			fmt.Fprintf(w, "  %-21s first quarter %6.1f MiB, last quarter %6.1f MiB (%+.1f%%); by quarter", p.name, mib(first),
				mib(last), (float64(last)/float64(max(first, 1))-1)*100)
			for i := range 4 {
				fmt.Fprintf(w, " %.1f", mib(meanOf(res.samples[i*len(res.samples)/4:(i+1)*len(res.samples)/4], p.get)))
			}
			fmt.Fprintln(w)
		}
		gs := make([]int, len(res.samples))
		for i, s := range res.samples {
			gs[i] = s.goroutines
		}
		sort.Ints(gs)
		fmt.Fprintf(w, "  broker goroutines while running: %d..%d\n", gs[0], gs[len(gs)-1])
	}
	for _, h := range []struct {
		name    string
		samples []int64
	}{{"garuda acp live heap", res.heapFront}, {"garuda-exec live heap", res.heapExec}} {
		if first, last, ok := quarters(h.samples); ok {
			fmt.Fprintf(w, "  %-21s median: first quarter %5.1f MiB, last %5.1f MiB (%+.1f%%), judged\n", h.name, mib(first), mib(last),
				(float64(last)/float64(max(first, 1))-1)*100)
		}
	}
	fmt.Fprintf(w, "  at rest after warm-up: fds %d (acp) %d (exec), goroutines %d, commands %d\n",
		res.warm.fdsFront, res.warm.fdsExec, res.warm.goroutines, res.warm.children)
	fmt.Fprintf(w, "  at rest at the end:    fds %d (acp) %d (exec), goroutines %d, commands %d\n",
		res.end.fdsFront, res.end.fdsExec, res.end.goroutines, res.end.children)
	fmt.Fprintf(w, "  processes left after exit: %d\n", len(res.left))
}

func meanOf(ss []soakSample, get func(soakSample) int64) int64 {
	var sum int64
	for _, s := range ss {
		sum += get(s)
	}
	return sum / int64(max(len(ss), 1))
}

// fdCount counts the open descriptors of pid, but for the files of soakprof (in prof).
func fdCount(pid int, prof string) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list the descriptors of pid %d: %w", pid, err)
	}
	n := 0
	for _, e := range ents {
		// soakprof's profile files, opened ahead and closed one by one as the soak goes, are not the process's own.
		if t, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(t, prof+"/") {
			continue
		}
		n++
	}
	return n, nil
}

// quarters returns the medians of the first and the last quarter of samples: a leak raises them, while a transient
// peak (a long session being loaded, a burst of output) does not.
func quarters(samples []int64) (first, last int64, ok bool) {
	q := len(samples) / 4
	if q == 0 {
		return 0, 0, false
	}
	median := func(xs []int64) int64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	return median(samples[:q]), median(samples[len(samples)-q:]), true
}

// memoryFigures are the memory figures a soak reports beside the live heap.
var memoryFigures = []struct {
	name string
	get  func(soakSample) int64
}{
	{"garuda acp PSS", func(s soakSample) int64 { return s.pssFront }},
	{"garuda-exec PSS", func(s soakSample) int64 { return s.pssExec }},
	{"garuda acp anon PSS", func(s soakSample) int64 { return s.anonFront }},
	{"garuda-exec anon PSS", func(s soakSample) int64 { return s.anonExec }},
}

// pssAnon returns the anonymous part of pid's proportional set size (Pss_Anon in /proc/PID/smaps_rollup).
func pssAnon(pid int) (int64, error) {
	return procBytes(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss_Anon")
}

// pss returns the proportional set size of pid in bytes (Pss in /proc/PID/smaps_rollup): its private pages and its
// share of the shared ones.
func pss(pid int) (int64, error) { return procBytes(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss") }
