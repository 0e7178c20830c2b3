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
		policy: policy.Request{Kind: policy.KindCommand, Tool: policy.OpBash, Command: cmdText, Sandboxed: !op.GetUnsandboxed(), Dir: c.sess.root},
		input:  cmdText,
		run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			q := &execv1.Question{Title: "$ " + cmdText, Preview: cmdText}
			if op.GetUnsandboxed() {
				q.Warning = unsandboxedWarning
			}
			if res, err := g.confirm(q); res != nil || err != nil {
				return res, err
			}
			return s.bash(ctx, c, op)
		},
	}, nil
}

// bash runs a command the policy allowed.
func (s *Service) bash(ctx context.Context, c *call, op *execv1.Bash) (*execv1.Result, error) {
	sess := c.sess
	spec, watch, err := s.prepareRun(sess, s.state(sess), op)
	if err != nil {
		return failed(err), nil
	}
	pr := newProgress(c)
	spec.OnOutput = pr.add
	res, err := sandbox.Run(ctx, spec)
	pr.stop()
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return failed(fmt.Errorf("%w; run `garuda-exec doctor` to see what this machine lacks", err)), nil
		}
		return failed(fmt.Errorf("run the command: %w", err)), nil
	}
	out := &execv1.Result{ExitCode: int32(res.ExitCode), Notices: res.Notices}
	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(string(res.Output), string(utf8.RuneError)))
	switch {
	case res.Cancelled || ctx.Err() != nil:
		out.Status = execv1.Status_STATUS_CANCELLED
		b.WriteString("\n[cancelled]")
	case res.TimedOut:
		out.Status = execv1.Status_STATUS_FAILED
		fmt.Fprintf(&b, "\n[timed out after %s; the command and everything it started were killed]", spec.Timeout)
	case len(res.LimitsHit) > 0:
		out.Status = execv1.Status_STATUS_FAILED
		fmt.Fprintf(&b, "\n[exit code %d: %s]", res.ExitCode, strings.Join(res.LimitsHit, "; "))
	case res.ExitCode != 0:
		out.Status = execv1.Status_STATUS_FAILED
		fmt.Fprintf(&b, "\n[exit code %d]", res.ExitCode)
	}
	for _, n := range res.Notices {
		b.WriteString("\n" + n)
	}
	if watch != nil {
		if err := s.guardEnd(sess, op.GetCommand(), watch, &b, out); err != nil {
			return nil, err
		}
	}
	out.Content = strings.TrimLeft(b.String(), "\n")
	if out.Content == "" {
		out.Content = "(no output)"
	}
	return out, nil
}

// prepareRun builds the sandbox's spec of a command (a bash command, an MCP server's program) and, in the
// sandbox, takes the guard's scan before it: what is protected now is made read-only for the command, and what is
// there is what the guard compares to after it.
func (s *Service) prepareRun(sess *session, st *policy.State, op *execv1.Bash) (sandbox.Spec, *guard.Watch, error) {
	spec, err := s.commandSpec(sess, st, op)
	if err != nil {
		return spec, nil, err
	}
	var watch *guard.Watch
	if !op.GetUnsandboxed() {
		if watch, err = s.guardBegin(sess, st, spec); err != nil {
			return spec, nil, err
		}
		spec.ReadOnly, spec.EnsureDirs = watch.Before().ReadOnly(), watch.Before().EnsureDirs()
		// Hooks and info folders that do not exist yet in git folders are made first, so that they can be covered.
		if err := sandbox.EnsureProtectedDirs(sess.fs.Real(), spec.EnsureDirs); err != nil {
			return spec, nil, fmt.Errorf("prepare the protected folders: %w", err)
		}
	}
	// A second name for a protected file would carry writes past its read-only mount: refuse to run.
	if linked := hardLinked(spec.ReadOnly); len(linked) > 0 {
		return spec, nil, fmt.Errorf("protected files have another hard link, through which a command could change them: %s; remove the other links and try again", strings.Join(linked, ", "))
	}
	return spec, watch, nil
}

// commandSpec builds the sandbox's spec from the session and its policy state.
func (s *Service) commandSpec(sess *session, st *policy.State, op *execv1.Bash) (sandbox.Spec, error) {
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
	if err := os.MkdirAll(sess.outputDir, 0o700); err != nil {
		return sandbox.Spec{}, fmt.Errorf("create the session's output folder: %w", err)
	}
	var timeout time.Duration
	if ms := op.GetTimeoutMs(); ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	spec := sandbox.Spec{
		Command:      op.GetCommand(),
		Dir:          sess.root,
		Root:         sess.root,
		ReadOnlyRoot: st.Mode == policy.ModePlan,
		Writable:     []string{work.tmp, work.cache},
		Hidden:       s.secrets(st),
		Env:          sandbox.BaseEnv(s.userHome, work.tmp, caches),
		Timeout:      timeout,
		Unsandboxed:  op.GetUnsandboxed(),
		AllowWeaker:  st.Team.WeakerSandboxAllowed(),
		Limits:       commandLimits(st),
		OutputFile:   filepath.Join(sess.outputDir, fmt.Sprintf("%s-%s.log", time.Now().UTC().Format("20060102T150405"), newID()[:6])),
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
	if err := os.MkdirAll(base, 0o700); err != nil {
		return workDirs{}, fmt.Errorf("create %s: %w", base, err)
	}
	// Defends against another user who made the folder first to watch or plant files in it.
	fi, err := os.Lstat(base)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return workDirs{}, fmt.Errorf("%s is not a private folder of this user; remove it", base)
	}
	w := workDirs{tmp: filepath.Join(base, sess.id, "tmp"), cache: filepath.Join(base, sess.id, "cache")}
	for _, d := range []string{w.tmp, w.cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return workDirs{}, fmt.Errorf("create %s: %w", d, err)
		}
	}
	return w, nil
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
		switch {
		case !strings.ContainsAny(p, "*?["):
			out = append(out, p)
		case strings.HasPrefix(p, st.Root+"/"):
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

func (p *progress) add(b []byte) {
	p.mu.Lock()
	if len(p.buf) < maxProgressChunk {
		p.buf = append(p.buf, b[:min(len(b), maxProgressChunk-len(p.buf))]...)
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
