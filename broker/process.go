package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
)

// Bounds of a background process's output. Defends the broker against a process that prints for ever: memory holds
// only a ring of the newest bytes, the file at most maxProcFile bytes, and a read returns at most maxProcRead bytes
// (its head and tail).
const (
	procRing     = 256 << 10
	maxProcFile  = sandbox.MaxOutputFile
	maxProcRead  = 32 << 10
	procReadHead = 8 << 10
	maxProcInput = 64 << 10
	// inputWait is how long input waits for the process to take it before the call answers that it is pending.
	inputWait = 2 * time.Second
)

// procs are a session's background processes. Every one ends with the session: its context derives from the
// session's, and the session's end waits for them.
type procs struct {
	mu     sync.Mutex
	byID   map[string]*proc
	closed bool
	wg     sync.WaitGroup
}

// proc is one background process.
type proc struct {
	id, command string
	writable    bool // it runs with the project writable (started in build mode): no plan-mode call gives it input
	started     time.Time
	cancel      context.CancelCauseFunc
	stdin       *io.PipeWriter
	done        chan struct{} // closed when it has ended and its end is noted

	mu           sync.Mutex
	out          procOutput
	inputPending bool
	stopReason   string // why it was stopped (by the model, a switch to plan mode): its end is a stop, not a failure
	// Set when it ended (before done is closed).
	end   string   // how it ended, one line: "exited with code 0", "stopped", …
	code  int      // its exit code
	notes []string // the guard's lines and the sandbox's notices
	ended time.Time
}

// errStopped is the cause of a process the model stopped.
var errStopped = errors.New("stopped by process_manager")

// room says whether the session may start another process, at most max running at once.
func (t *procs) room(max int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.roomLocked(max)
}

func (t *procs) roomLocked(max int) error {
	if t.closed {
		return errors.New("the session is closing")
	}
	running := 0
	for _, q := range t.byID {
		if !q.isDone() {
			running++
		}
	}
	if running >= max {
		return fmt.Errorf("this session runs %d background processes already, the most allowed (limits.background_processes); "+
			"stop one first", running)
	}
	return nil
}

// add registers p, unless the session is closing or already runs max processes.
func (t *procs) add(p *proc, max int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.roomLocked(max); err != nil {
		return err
	}
	if t.byID == nil {
		t.byID = map[string]*proc{}
	}
	t.pruneLocked()
	t.byID[p.id] = p
	t.wg.Add(1)
	return nil
}

// maxEnded bounds the ended processes a session keeps for read: each holds its ring and its file open.
const maxEnded = 16

// pruneLocked forgets the oldest ended processes past maxEnded: defends against a session that starts process
// after process and so holds their memory and descriptors until it ends.
func (t *procs) pruneLocked() {
	var ended []*proc
	for _, p := range t.byID {
		if p.isDone() {
			ended = append(ended, p)
		}
	}
	if len(ended) < maxEnded {
		return
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].started.Before(ended[j].started) })
	for _, p := range ended[:len(ended)-maxEnded+1] {
		delete(t.byID, p.id)
		p.mu.Lock()
		if p.out.file != nil {
			p.out.file.Close()
			p.out.file = nil
		}
		p.out.ring = nil
		p.mu.Unlock()
	}
}

// get finds a process of this session: a process of another session has no name here.
func (t *procs) get(id string) (*proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[id]
	if p == nil {
		return nil, fmt.Errorf("there is no background process %q in this session (process_manager list shows them)", id)
	}
	return p, nil
}

// list returns the session's processes, oldest first.
func (t *procs) list() []*proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*proc, 0, len(t.byID))
	for _, p := range t.byID {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].started.Before(out[j].started) })
	return out
}

// closeAll refuses new processes and waits until every one has ended; the session's context, which theirs derive
// from, is cancelled first.
func (t *procs) closeAll() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
	for _, p := range t.list() {
		p.mu.Lock()
		if p.out.file != nil {
			p.out.file.Close()
			p.out.file = nil
		}
		p.mu.Unlock()
	}
}

// stopAll stops every running process (a switch to plan mode), waits for them to end, and returns the ids stopped.
func (t *procs) stopAll(why string) []string {
	var ids []string
	var stopped []*proc
	for _, p := range t.list() {
		if !p.isDone() {
			p.stop(why)
			ids = append(ids, p.id)
			stopped = append(stopped, p)
		}
	}
	for _, p := range stopped {
		p.waitStopped()
	}
	return ids
}

// stopSettle bounds the wait for a stopped process: TermGrace, then the kill of its namespace.
const stopSettle = sandbox.TermGrace + 3*time.Second

// waitStopped waits for a stopped process to be gone, at most stopSettle.
func (p *proc) waitStopped() bool {
	select {
	case <-p.done:
		return true
	case <-time.After(stopSettle):
		return false
	}
}

func (p *proc) isDone() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop cancels the process: SIGTERM, TermGrace, then SIGKILL of its whole pid namespace (sandbox.Run).
func (p *proc) stop(why string) {
	p.mu.Lock()
	if p.stopReason == "" {
		p.stopReason = why
	}
	p.mu.Unlock()
	p.cancel(errStopped)
}

// state is the one-line state of the process.
func (p *proc) state() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.end != "" {
		return p.end
	}
	return fmt.Sprintf("running for %s", time.Since(p.started).Round(time.Second))
}

// write is the sandbox's OnOutput: every chunk of the output, in order.
func (p *proc) write(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.write(b)
}

// read returns the output from mark since on, bounded, and the next mark.
func (p *proc) read(since int64) (string, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.read(since)
}

// input writes text to the process's standard input and closes it if asked. A process that does not read keeps
// the text pending (one input at a time); the call does not wait for it.
func (p *proc) input(text string, closeIt bool) (string, error) {
	if len(text) > maxProcInput {
		return "", fmt.Errorf("the input has %d bytes, at most %d are taken at once", len(text), maxProcInput)
	}
	p.mu.Lock()
	if p.end != "" {
		p.mu.Unlock()
		return "", fmt.Errorf("process %s has ended (%s): it takes no input", p.id, p.end)
	}
	if p.inputPending {
		p.mu.Unlock()
		return "", fmt.Errorf("process %s has not read its last input yet", p.id)
	}
	p.inputPending = true
	p.mu.Unlock()
	written := make(chan error, 1)
	go func() {
		var err error
		if text != "" {
			_, err = io.WriteString(p.stdin, text)
		}
		if err == nil && closeIt {
			err = p.stdin.Close()
		}
		p.mu.Lock()
		p.inputPending = false
		p.mu.Unlock()
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			return "", fmt.Errorf("process %s: its standard input is closed: %w", p.id, err)
		}
	case <-time.After(inputWait):
		return fmt.Sprintf("Process %s has not read the input yet; it stays pending until it does.", p.id), nil
	}
	if closeIt {
		return fmt.Sprintf("Sent %d bytes to process %s and closed its standard input.", len(text), p.id), nil
	}
	return fmt.Sprintf("Sent %d bytes to process %s.", len(text), p.id), nil
}

// procOutput is a background process's output: a ring of the newest procRing bytes in memory and the first
// maxProcFile bytes in a file of the session's output folder.
type procOutput struct {
	total    int64
	ring     []byte
	ringPos  int
	file     *os.File
	path     string
	fileSize int64
	fileErr  error
}

func (o *procOutput) write(b []byte) {
	o.total += int64(len(b))
	if o.file != nil && o.fileErr == nil && o.fileSize < maxProcFile {
		n := min(int64(len(b)), maxProcFile-o.fileSize)
		var w int
		w, o.fileErr = o.file.Write(b[:n])
		o.fileSize += int64(w)
	}
	if o.ring == nil {
		o.ring = make([]byte, 0, procRing)
	}
	for len(b) > 0 {
		if len(o.ring) < procRing {
			n := min(len(b), procRing-len(o.ring))
			o.ring = append(o.ring, b[:n]...)
			b = b[n:]
			continue
		}
		n := copy(o.ring[o.ringPos:], b)
		b = b[n:]
		o.ringPos = (o.ringPos + n) % procRing
	}
}

// ringStart is the offset of the oldest byte the ring holds.
func (o *procOutput) ringStart() int64 { return o.total - int64(len(o.ring)) }

// span returns the bytes [a, b) of the output from the ring or the file; what neither holds is a note.
func (o *procOutput) span(a, b int64) []byte {
	var out []byte
	if rs := o.ringStart(); a < rs {
		end := min(b, rs)
		if o.file != nil && end <= o.fileSize {
			buf := make([]byte, end-a)
			n, _ := o.file.ReadAt(buf, a)
			out = append(out, buf[:n]...)
		} else {
			out = append(out, fmt.Sprintf("\n[... bytes %d to %d are no longer kept ...]\n", a, end)...)
		}
		a = end
	}
	if a >= b {
		return out
	}
	// The ring in order: from ringPos when it is full, else from 0.
	ordered := o.ring
	if len(o.ring) == procRing && o.ringPos > 0 {
		ordered = append(append(make([]byte, 0, procRing), o.ring[o.ringPos:]...), o.ring[:o.ringPos]...)
	}
	rs := o.ringStart()
	return append(out, ordered[a-rs:b-rs]...)
}

// read returns the output since the mark (its first procReadHead and last bytes when more than maxProcRead came)
// and the next mark.
func (o *procOutput) read(since int64) (string, int64) {
	since = max(0, min(since, o.total))
	var b []byte
	if o.total-since <= maxProcRead {
		b = o.span(since, o.total)
	} else {
		cut := o.total - since - maxProcRead
		b = o.span(since, since+procReadHead)
		where := ""
		if o.path != "" && o.fileErr == nil {
			where = fmt.Sprintf("; the first %d MiB of the output are in %s", maxProcFile>>20, o.path)
		}
		b = append(b, fmt.Sprintf("\n[... %d bytes cut%s ...]\n", cut, where)...)
		b = append(b, o.span(o.total-(maxProcRead-procReadHead), o.total)...)
	}
	return strings.ToValidUTF8(string(b), string(utf8.RuneError)), o.total
}

// startProcess runs a command the policy allowed as a background process of the session: the same spec, guard
// and limits as bash, stdin a pipe, no wall-clock limit. It returns once the process is started.
func (s *Service) startProcess(sess *session, command string, spec sandbox.Spec, watch *guard.Watch) (*proc, error) {
	ctx, cancel := context.WithCancelCause(sess.ctx)
	// The network policy, through the broker's proxy, as for bash. No call outlives the start to ask on: a host no
	// rule allows is refused with how to allow it.
	px, err := s.startProxy(ctx, sess, s.commandNetwork(nil, nil, sess, command))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	spec.Proxy = px.socket
	inR, inW := io.Pipe()
	p := &proc{id: "bg-" + newID()[:6], command: command, started: time.Now(), cancel: cancel, stdin: inW, done: make(chan struct{}),
		writable: !spec.ReadOnlyRoot || spec.Unsandboxed}
	if err := sess.procs.add(p, policy.BackgroundLimit(s.state(sess))); err != nil {
		cancel(nil)
		px.stop()
		return nil, err
	}
	// One descriptor: written in order, read at offsets. Without it, reads have only the ring.
	if f, err := os.OpenFile(spec.OutputFile, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600); err == nil {
		p.out.file, p.out.path = f, spec.OutputFile
	}
	spec.OutputFile = "" // the process keeps its own file, bounded
	spec.Stdin, spec.UntilCancelled, spec.OnOutput = inR, true, p.write
	ran := make(chan struct{}) // closed when the process's run has ended
	var periodic sync.WaitGroup
	if watch != nil {
		periodic.Go(func() { s.guardWhileRunning(sess, p, watch, ran) })
	}
	go func() {
		defer sess.procs.wg.Done()
		res, err := sandbox.Run(ctx, spec)
		close(ran)
		periodic.Wait() // its last check's lines are noted before the end's
		px.stop()
		inR.CloseWithError(io.ErrClosedPipe) // an input still pending ends
		s.processEnded(sess, p, res, err, watch, context.Cause(ctx))
		cancel(nil)
	}()
	return p, nil
}

// How often the guard checks what a running background process or MCP stdio server left: at once when the entries
// of a folder it watches change (a file or folder made, removed or renamed) or a file of a git folder does, at most
// guardSpacing apart and within a budget of check time (guardBurst at once, refilled at 1/guardShare of the time
// passing: 2 % of a core in the long run); else every guardEveryMin while a check is cheap (an incremental scan,
// well under a millisecond in a project of 20,000 files), spaced to guardShare times what the last check took when
// it is not (a tree inotify cannot follow, walked whole), at least every guardEvery. Defends against a plant that
// the user's git (a shell prompt, an editor's git view, which runs on the same file events) runs between checks:
// the window is the check's own time after the plant's last file, not a second. A plant made while a run spends
// more than the budget waits for the interval.
const (
	guardEveryMin = time.Second
	guardEvery    = 30 * time.Second
	guardShare    = 50 // at most 2 % of a core
	guardBurst    = 20 * time.Millisecond
	guardSpacing  = 5 * time.Millisecond
)

// guardEveryForTests, when set, replaces the interval (atomic: tests change it while sessions of theirs end);
// guardDeafForTests leaves changes untold, for the tests' controls.
var (
	guardEveryForTests atomic.Int64
	guardDeafForTests  atomic.Bool
)

// guardInterval is the wait before the next periodic check, after one that took took.
func guardInterval(took time.Duration) time.Duration {
	if d := guardEveryForTests.Load(); d > 0 {
		return time.Duration(d)
	}
	return min(max(guardEveryMin, guardShare*took), guardEvery)
}

// guardWhileRunning runs the guard's after-checks while the process runs (everyGuardInterval): defends against a
// long-lived process that plants, say, a repository with core.fsmonitor, which the user's shell would run long
// before the process ends.
func (s *Service) guardWhileRunning(sess *session, p *proc, watch *guard.Watch, ran <-chan struct{}) {
	everyGuardInterval(ran, watch.Changed, func(time.Time) {
		lines, err := s.guardAfter(sess.id, policy.OpProcessManager, p.command, watch)
		if err != nil {
			lines = append(lines, "Warning: "+err.Error())
		}
		p.mu.Lock()
		p.notes = append(p.notes, lines...)
		p.mu.Unlock()
	})
}

// everyGuardInterval calls check until stop closes: when changed's channel closes (the guard saw the root's entries
// change), within the budget the constants above say, and at the guard's interval (guardInterval) besides. It is the
// guard's periodic check of what a running background process or MCP stdio server left.
func everyGuardInterval(stop <-chan struct{}, changed func() <-chan struct{}, check func(now time.Time)) {
	if guardDeafForTests.Load() {
		changed = func() <-chan struct{} { return nil }
	}
	t := time.NewTimer(guardInterval(0))
	defer t.Stop()
	credit, refilled := guardBurst, time.Now() // check time that may be spent now
	refill := func(now time.Time) {
		credit, refilled = min(guardBurst, credit+now.Sub(refilled)/guardShare), now
	}
	var last time.Time
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-changed():
			refill(time.Now())
			wait := max(time.Until(last.Add(guardSpacing)), -credit*guardShare)
			if wait > 0 {
				select {
				case <-stop:
					return
				case <-time.After(wait):
				}
			}
		}
		now := time.Now()
		check(now)
		took := time.Since(now)
		refill(now)
		credit, last = credit-took, now
		t.Reset(guardInterval(took))
	}
}

// processEnded notes how a process ended, runs the guard's after-checks on what it left (like a command's) and
// audits its end.
func (s *Service) processEnded(sess *session, p *proc, res *sandbox.Result, err error, watch *guard.Watch, cause error) {
	var end string
	var notes []string
	code := -1
	p.mu.Lock()
	why := p.stopReason
	p.mu.Unlock()
	switch {
	case err != nil:
		end = "failed to start: " + runError(err).Error()
	case why != "":
		end, code = fmt.Sprintf("stopped: %s (exit code %d)", why, res.ExitCode), res.ExitCode
	case cause != nil && res.Cancelled:
		end, code = "ended with its session", res.ExitCode
	case len(res.LimitsHit) > 0:
		end, code = fmt.Sprintf("exited with code %d: %s", res.ExitCode, strings.Join(res.LimitsHit, "; ")), res.ExitCode
	default:
		end, code = fmt.Sprintf("exited with code %d", res.ExitCode), res.ExitCode
	}
	if res != nil {
		notes = append(notes, res.Notices...)
	}
	if watch != nil {
		lines, gerr := s.guardAfter(sess.id, policy.OpProcessManager, p.command, watch)
		watch.End()
		notes = append(notes, lines...)
		if gerr != nil {
			notes = append(notes, "Warning: "+gerr.Error())
		}
	}
	p.mu.Lock()
	p.end, p.code, p.notes, p.ended = end, code, append(p.notes, notes...), time.Now()
	p.mu.Unlock()
	close(p.done)
	rec := audit.Record{Session: sess.id, Event: audit.EventProcessEnd, Op: policy.OpProcessManager, Input: p.command,
		Status: end, DurationMS: time.Since(p.started).Milliseconds(), Detail: map[string]string{"id": p.id}}
	if code >= 0 {
		rec.ExitCode = &code
	}
	if err := s.record(rec, false); err != nil {
		s.cfg.Log.Warn("audit a background process's end", "session", sess.id, "err", err)
	}
}
