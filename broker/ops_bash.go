package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// unsandboxedWarning is shown above the question to run a command outside the sandbox.
const unsandboxedWarning = "Outside the sandbox: this command can use the network and write anywhere your user can."

// progressEvery is how often command output is streamed to the front end at most.
const progressEvery = 250 * time.Millisecond

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
	spec.OnOutput = pr.add
	res, undone, err := s.runGuarded(ctx, c, st, policy.OpBash, spec)
	pr.stop()
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

// runFailure is a sandboxed run that could not start or could not be checked: the call fails with its reason.
type runFailure struct{ err error }

func (f *runFailure) Error() string { return f.err.Error() }
func (f *runFailure) Unwrap() error { return f.err }

// runGuarded runs spec in the sandbox under the command guard, the one way the broker runs a command to its end (a
// bash call, a hook): the guard's scan before (what is protected is made read-only for the command), the run, and
// the scan after, which undoes what the command left for programs that run later outside the sandbox. It returns
// the guard's lines about what it undid; op names the run in the guard's audit record (bash, hook). A *runFailure
// error means nothing ran, or its result cannot be trusted; any other error (the audit log) ends the call.
func (s *Service) runGuarded(ctx context.Context, c *call, st *policy.State, op string,
	spec sandbox.Spec) (*sandbox.Result, []string, error) {
	watch, err := s.guardBefore(c.sess, st, &spec)
	if err != nil {
		return nil, nil, &runFailure{err}
	}
	res, err := sandbox.Run(ctx, spec)
	if err != nil {
		return nil, nil, &runFailure{runError(err)}
	}
	if watch == nil {
		return res, nil, nil
	}
	undone, err := s.guardAfter(c.sess.id, op, spec.Command, watch)
	return res, undone, err
}

// guardBefore takes the guard's scan before a sandboxed command (what is protected now is made read-only for it, and
// what to compare with after); nil for a command outside the sandbox. A background process takes it too, and the
// scan after when it ends.
func (s *Service) guardBefore(sess *session, st *policy.State, spec *sandbox.Spec) (*guard.Watch, error) {
	var watch *guard.Watch
	if !spec.Unsandboxed {
		var err error
		if watch, err = s.guardBegin(sess, st, *spec); err != nil {
			return nil, err
		}
		spec.ReadOnly, spec.EnsureDirs = watch.Before().ReadOnly(), watch.Before().EnsureDirs()
		// Hooks and info folders that do not exist yet in git folders are made first, so that they can be covered.
		if err := sandbox.EnsureProtectedDirs(sess.fs.Real(), spec.EnsureDirs); err != nil {
			return nil, fmt.Errorf("prepare the protected folders: %w", err)
		}
	}
	// A second name for a protected file would carry writes past its read-only mount: refuse to run.
	if linked := hardLinked(spec.ReadOnly); len(linked) > 0 {
		return nil, fmt.Errorf("protected files have another hard link, through which a command could change them: %s; "+
			"remove the other links and try again", strings.Join(linked, ", "))
	}
	return watch, nil
}

// prepareCommand makes the sandbox's spec of a command the policy allowed and takes the guard's scan before it
// (prepareRun). A failure is the Result that ends the call.
func (s *Service) prepareCommand(c *call, op *execv1.Bash) (sandbox.Spec, *guard.Watch, *execv1.Result) {
	spec, watch, err := s.prepareRun(c.sess, s.callState(c), op)
	if err != nil {
		return spec, nil, failed(err)
	}
	return spec, watch, nil
}

// prepareRun builds the sandbox's spec of a command (a background process, an MCP server's program) and takes the
// guard's scan before it (guardBefore).
func (s *Service) prepareRun(sess *session, st *policy.State, op *execv1.Bash) (sandbox.Spec, *guard.Watch, error) {
	spec, err := s.commandSpec(sess, st, op)
	if err != nil {
		return spec, nil, err
	}
	watch, err := s.guardBefore(sess, st, &spec)
	return spec, watch, err
}

// runError is a failure of sandbox.Run, in words.
func runError(err error) error {
	if errors.Is(err, sandbox.ErrUnavailable) {
		return fmt.Errorf("%w; run `garuda-exec doctor` to see what this machine lacks", err)
	}
	return fmt.Errorf("run the command: %w", err)
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

// commandSpec builds the sandbox's spec of a bash call from the session and its policy state.
func (s *Service) commandSpec(sess *session, st *policy.State, op *execv1.Bash) (sandbox.Spec, error) {
	var timeout time.Duration
	if ms := op.GetTimeoutMs(); ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	spec, err := s.sandboxSpec(sess, st, op.GetCommand(), timeout, op.GetUnsandboxed())
	if err != nil {
		return spec, err
	}
	if err := os.MkdirAll(sess.outputDir, 0o700); err != nil {
		return sandbox.Spec{}, fmt.Errorf("create the session's output folder: %w", err)
	}
	spec.OutputFile = filepath.Join(sess.outputDir, fmt.Sprintf("%s-%s.log", time.Now().UTC().Format("20060102T150405"), newID()[:6]))
	return spec, nil
}

// sandboxSpec is the spec every command of a session runs with (a bash call's, a hook's): the project as cwd and
// the writable root (read-only in plan mode), the session's private temp and cache folders, the secrets hidden,
// the scrubbed environment and the limits of policy.
func (s *Service) sandboxSpec(sess *session, st *policy.State, command string, timeout time.Duration,
	unsandboxed bool) (sandbox.Spec, error) {
	work, err := s.workDirs(sess)
	if err != nil {
		return sandbox.Spec{}, err
	}
	caches := map[string]string{}
	// The session's cache folders, handed to the usual tools so that builds and tests work in the sandbox.
	for _, v := range []string{"XDG_CACHE_HOME", "GOCACHE", "npm_config_cache", "PIP_CACHE_DIR", "YARN_CACHE_FOLDER"} {
		caches[v] = filepath.Join(work.cache, strings.ToLower(v))
		os.MkdirAll(caches[v], 0o700)
	}
	spec := sandbox.Spec{
		Command:      command,
		Dir:          sess.root,
		Root:         sess.root,
		ReadOnlyRoot: st.Mode == policy.ModePlan,
		Writable:     []string{work.tmp, work.cache},
		Hidden:       s.secrets(st),
		Env:          sandbox.BaseEnv(s.userHome, work.tmp, caches),
		Timeout:      timeout,
		Unsandboxed:  unsandboxed,
		AllowWeaker:  st.Team.WeakerSandboxAllowed(),
		Limits:       commandLimits(st),
	}
	if !unsandboxed {
		spec.Network = sess.net.get() // the session's commands share its loopback
	}
	return spec, nil
}

// commandLimits are the sandbox's limits from policy (the tightest of team policy and the user's settings).
func commandLimits(st *policy.State) sandbox.Limits {
	l := policy.CommandLimits(st)
	return sandbox.Limits{MemoryBytes: int64(l.MemoryMB) << 20, Processes: l.Processes}
}

type workDirs struct{ tmp, cache string }

// workBase holds every session's private folders of this user.
func workBase() string { return filepath.Join(os.TempDir(), fmt.Sprintf("garuda-%d", os.Getuid())) }

// workDirs are the session's private temp and cache folders, writable by its commands: outside $GARUDA_HOME,
// which commands cannot see.
func (s *Service) workDirs(sess *session) (workDirs, error) {
	base := workBase()
	if err := privateFolder(base); err != nil {
		return workDirs{}, err
	}
	w := workDirs{tmp: filepath.Join(base, sess.id, "tmp"), cache: filepath.Join(base, sess.id, "cache")}
	for _, d := range []string{w.tmp, w.cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return workDirs{}, fmt.Errorf("create %s: %w", d, err)
		}
	}
	return w, nil
}

// privateFolder makes dir (0700) if it is missing and checks that it is this user's alone: defends against another
// user who made the folder first to watch or plant files in it.
func privateFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return fmt.Errorf("%s is not a private folder of this user; remove it", dir)
	}
	return nil
}

// secrets are hidden from commands: Garuda's own home, the usual credential stores, and what read-deny rules name.
func (s *Service) secrets(st *policy.State) []string {
	out := []string{s.cfg.Home}
	if st.Team != nil && st.Team.AuditDir != "" {
		out = append(out, st.Team.AuditDir) // the audit log holds every session's command text
	}
	if s.userHome != "" {
		for _, p := range []string{".ssh", ".aws", ".config/gh", ".netrc", ".docker", ".gnupg", ".kube", ".git-credentials", ".config/gcloud", ".azure", ".npmrc", ".pypirc"} {
			out = append(out, filepath.Join(s.userHome, p))
		}
	}
	walkRoot := false
	for _, p := range policy.ReadDenyPatterns(st) {
		rel, inRoot := pathglob.Within(st.Root, p)
		switch {
		case !strings.ContainsAny(p, "*?["):
			out = append(out, p)
		case inRoot && rel != "":
			walkRoot = true // "**" and friends: the walk below asks the policy itself, so its semantics hold
		default:
			matches, _ := filepath.Glob(p)
			out = append(out, matches...)
		}
	}
	if walkRoot {
		out = append(out, deniedInRoot(st)...)
	}
	var existing []string
	for _, p := range out {
		if _, err := os.Lstat(p); err == nil {
			existing = append(existing, p)
		}
	}
	return existing
}

// maxProtectedWalk bounds the walk for read-denied paths.
const maxProtectedWalk = 50000

// deniedInRoot lists the files and folders of the root that the rules deny reading, for the sandbox to hide
// (a denied folder is hidden whole). Bounded like the scan of protected paths.
func deniedInRoot(st *policy.State) []string {
	var out []string
	n := 0
	filepath.WalkDir(st.Root, func(p string, d fs.DirEntry, err error) error {
		n++
		if err != nil || n > maxProtectedWalk {
			return filepath.SkipDir
		}
		if p == st.Root {
			return nil
		}
		if policy.Decide(policy.Request{Kind: policy.KindRead, Tool: "read_file", Path: p}, st).Verdict == policy.Deny {
			out = append(out, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out
}

// progress streams command output to the front end a few times a second at most.
type progress struct {
	c    *call
	mu   sync.Mutex
	buf  []byte
	done chan struct{}
	wg   sync.WaitGroup
}

// maxProgressChunk bounds what one progress message carries; the rest of a burst is in the result and the file.
const maxProgressChunk = 16 << 10

func newProgress(c *call) *progress {
	p := &progress{c: c, done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.flush()
			case <-p.done:
				p.flush()
				return
			}
		}
	}()
	return p
}

// add keeps the newest maxProgressChunk bytes of what came since the last flush: the front end shows the tail of
// the output, so a burst's end matters more than its start.
func (p *progress) add(b []byte) {
	p.mu.Lock()
	if len(b) >= maxProgressChunk {
		p.buf = append(p.buf[:0], b[len(b)-maxProgressChunk:]...)
	} else {
		if over := len(p.buf) + len(b) - maxProgressChunk; over > 0 {
			p.buf = append(p.buf[:0], p.buf[over:]...)
		}
		p.buf = append(p.buf, b...)
	}
	p.mu.Unlock()
}

func (p *progress) flush() {
	p.mu.Lock()
	b := p.buf
	p.buf = nil
	p.mu.Unlock()
	if len(b) > 0 {
		p.c.progress(&execv1.Progress{Output: b})
	}
}

func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
