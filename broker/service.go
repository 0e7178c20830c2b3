package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/peercred"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/broker/sessionlog"
	"github.com/garuda-dev/garuda/broker/undo"
	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Config is what the broker takes once, from its flags and environment, before any client speaks.
type Config struct {
	Version string
	// Home is $GARUDA_HOME (default ~/.garuda).
	Home string
	// ManagedPolicy is the team's managed policy file.
	ManagedPolicy string
	Log           *slog.Logger
}

// Service implements the broker API.
type Service struct {
	execv1.UnimplementedExecServiceServer
	cfg Config

	mu       sync.Mutex
	sessions map[string]*session

	// done ends with Shutdown; every session's context derives from it.
	done context.Context
	end  context.CancelCauseFunc
	// calls counts the running calls, so that Shutdown waits for every command to be gone.
	calls sync.WaitGroup

	id       string // this broker instance, in every audit record
	userHome string

	auditMu sync.Mutex
	audit   *audit.Log

	undos *undo.Store

	consentMu sync.Mutex // one read-modify-write of consents.json at a time
}

// ErrShutdown is the cause of everything the broker ends when it shuts down: commands are killed at once, without
// the grace a user's cancel gets.
var ErrShutdown = sandbox.ErrShutdown

// NewService makes the broker service.
func NewService(cfg Config) *Service {
	ctx, end := context.WithCancelCause(context.Background())
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	uh, _ := os.UserHomeDir()
	if uh != "" {
		uh = realPath(uh)
	}
	// Garuda's folders by their real names: every path the tools open is compared with them by name, and a root
	// reached through a symlink is decided under its real name too.
	cfg.Home = realPath(cfg.Home)
	return &Service{cfg: cfg, sessions: map[string]*session{}, done: ctx, end: end, id: newID()[:8], userHome: uh,
		undos: undo.Open(filepath.Join(cfg.Home, "undo"))}
}

// realPath is p with the symlinks of its longest existing part resolved (a folder not created yet keeps the rest
// of its name).
func realPath(p string) string {
	rest := ""
	for d := filepath.Clean(p); ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		if d == filepath.Dir(d) {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// Shutdown ends every session and waits until every call, and so every command, is over.
func (s *Service) Shutdown() {
	s.end(ErrShutdown)
	s.calls.Wait()
	s.mu.Lock()
	for id, sess := range s.sessions {
		sess.end(ErrShutdown)
		sess.close()
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	s.auditMu.Lock()
	if s.audit != nil {
		s.audit.Close()
	}
	s.auditMu.Unlock()
}

type session struct {
	id    string
	root  string
	owner peercred.Peer

	ctx    context.Context
	cancel context.CancelCauseFunc
	calls  sync.WaitGroup // the session's running calls

	fs        *fsops.Root
	guard     *guard.Guard // what commands leave behind for git, hook managers and editors
	files     policyFiles
	outputDir string // full command outputs: $GARUDA_HOME/sessions/<id>/
	log       *sessionlog.Writer
	mcp       mcpState

	mu      sync.Mutex
	mode    execv1.Mode
	rules   []policy.Rule // "Allow for this session": in memory, never beyond the session
	closing bool
	hooks   hookConsent // whether the project's hooks may run

	procs   procs // background processes: they end with the session
	net     sessionNet
	folders sessionFolders // its temp, cache and proxy folders below workBase and shortBase
}

// begin counts a call of the session, unless the session is closing.
func (s *session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.calls.Add(1)
	return true
}

// end stops new calls, cancels the running ones and waits for them.
func (s *session) end(cause error) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel(cause)
	s.calls.Wait()
	s.procs.closeAll()
}

// close releases what the session holds; its calls have ended (its context is cancelled first).
func (s *session) close() {
	s.closeMCP()
	s.net.close() // the session's network namespace, and whatever still runs in it
	s.fs.Close()
	s.guard.Close()
	s.log.Close()
	// The session's temp and cache folders end with it; what a command left there is not the user's work.
	s.folders.remove(s.id)
}

func (s *session) currentMode() execv1.Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// Hello reports versions and the sandbox.
func (s *Service) Hello(ctx context.Context, req *execv1.HelloRequest) (*execv1.HelloResponse, error) {
	feats, ready := probeSandbox()
	return &execv1.HelloResponse{
		BrokerVersion: s.cfg.Version,
		ApiVersion:    "v1",
		Pid:           uint32(os.Getpid()),
		Uid:           uint32(os.Getuid()),
		Home:          s.cfg.Home,
		Sandbox:       feats,
		SandboxReady:  ready,
		OpenSessions:  uint32(s.sessionsOfConn(ctx)),
		Goroutines:    uint32(runtime.NumGoroutine()),
	}, nil
}

// OpenSession opens a session on a root folder; the broker mints the id.
func (s *Service) OpenSession(ctx context.Context, req *execv1.OpenSessionRequest) (*execv1.OpenSessionResponse, error) {
	p, _ := peercred.FromContext(ctx)
	sess, res, err := s.openSession(p, req.GetRoot(), req.GetMode(), "", nil)
	if err != nil {
		return nil, toStatus(err)
	}
	var notices []string
	sess.mcp.editor, notices = editorMCPServers(req.GetMcpServers())
	res.Notices = append(res.Notices, notices...)
	s.register(sess)
	return res, nil
}

// openSession opens a broker session on root: a new one (id empty: minted, its file created at the first Record),
// or an earlier one resumed from its loaded file. The session is not registered yet.
func (s *Service) openSession(p peercred.Peer, reqRoot string, mode execv1.Mode, id string,
	loaded *sessionlog.Loaded) (*session, *execv1.OpenSessionResponse, error) {
	pf := s.homePolicy()
	if strings.ContainsRune(reqRoot, 0) {
		// No folder's path holds one; said as such, not as a read rule's refusal.
		return nil, nil, fmt.Errorf("root %q: a folder's path cannot hold a NUL character: %w", reqRoot, ErrBadRequest)
	}
	if filepath.IsAbs(reqRoot) {
		if err := s.rootHidden(filepath.Clean(reqRoot), "", pf); err != nil {
			return nil, nil, err
		}
	}
	root, err := checkRoot(reqRoot)
	if err != nil {
		return nil, nil, err
	}
	if n := s.sessionsOf(p.UID); n >= maxSessions {
		return nil, nil, fmt.Errorf("uid %d has %d sessions open: %w", p.UID, n, ErrTooMany)
	}
	if mode == execv1.Mode_MODE_UNSPECIFIED {
		mode = execv1.Mode_MODE_BUILD
	}
	fsroot, err := fsops.OpenRoot(root)
	if err != nil {
		return nil, nil, fmt.Errorf("root %s: %w: %v", root, ErrRootNotFolder, err)
	}
	// The whole filesystem, or Garuda's own folder, is no project: commands could write everywhere the broker can.
	// Checked on the folder opened too, so that a symlink to / or into $GARUDA_HOME is no way around it.
	if s.noProject(root) || s.noProject(fsroot.Real()) {
		fsroot.Close()
		return nil, nil, fmt.Errorf("root %s: choose a project folder (not / nor $GARUDA_HOME): %w", root, ErrBadRequest)
	}
	if err := checkReach(p, fsroot); err != nil {
		fsroot.Close()
		return nil, nil, err
	}
	if err := s.rootHidden(root, fsroot.Real(), pf); err != nil {
		fsroot.Close()
		return nil, nil, err
	}
	// Every action is recorded before it is done: where the log cannot be written (an unwritable home) nothing can
	// be, which the user reads once, here, instead of from every tool call. A team policy that cannot be read is
	// not this: the session opens, and the policy refuses what it governs.
	if _, err := s.auditLog(); err != nil {
		if _, terr := s.teamPolicy(); terr == nil {
			fsroot.Close()
			return nil, nil, fmt.Errorf("the audit log cannot be written, so Garuda can do nothing: %v (make that folder "+
				"writable, or set GARUDA_HOME to a folder you can write): %w", err, ErrConfig)
		}
	}
	sctx, cancel := context.WithCancelCause(s.done)
	dir := filepath.Join(s.cfg.Home, "sessions")
	var log *sessionlog.Writer
	if loaded != nil {
		log = loaded.Writer
	} else {
		id = newID()
		log = sessionlog.Create(dir, id, sessionlog.Header{Root: root, UID: p.UID})
	}
	sess := &session{id: id, root: root, owner: p, ctx: sctx, cancel: cancel, mode: mode, fs: fsroot,
		outputDir: filepath.Join(dir, id), log: log}
	sess.files = s.loadPolicy(fsroot, pf)
	notices := append([]string(nil), sess.files.notices...)
	if n := policy.UntrustedNotice(s.state(sess)); n != "" {
		notices = append(notices, n)
	}
	notices = append(notices, sandboxNotices(sess.files.team)...)
	instr, instrFile := s.instructions(sess)
	commands, warnings := s.commandList(sess)
	notices = append(notices, warnings...)
	maxEntries, skip := policy.GuardWalk(s.state(sess))
	sess.guard = guard.New(fsroot.Real(), guard.Options{MaxEntries: maxEntries, Skip: skip, UserHome: s.userHome})
	sess.guard.Prime()
	// What a run of a broker that died during it left is undone before anything runs in this session.
	notices = append(notices, s.recoverPending(sess)...)
	return sess, &execv1.OpenSessionResponse{SessionId: sess.id, Root: root, Notices: notices,
		Instructions: instr, InstructionsFile: instrFile, Commands: commands, Hooked: hookedEvents(sess.files)}, nil
}

// register makes an opened session reachable by its id.
func (s *Service) register(sess *session) {
	s.mu.Lock()
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	s.cfg.Log.Info("session opened", "session", sess.id, "root", sess.root, "uid", sess.owner.UID)
}

// noProject reports whether dir is / or $GARUDA_HOME or below it.
func (s *Service) noProject(dir string) bool {
	_, in := pathglob.Within(s.cfg.Home, dir)
	return dir == "/" || in
}

// checkRoot accepts an absolute path of an existing folder.
func checkRoot(root string) (string, error) {
	if root == "" || !filepath.IsAbs(root) {
		return "", fmt.Errorf("root %q: %w", root, ErrRootNotAbsolute)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", root, ErrRootNotFolder)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("root %s: %w", root, ErrRootNotFolder)
	}
	return filepath.Clean(root), nil
}

// checkReach refuses a root that the peer does not own when the peer is another user than the broker's: defends
// against one client of a shared broker acting on another user's project with the broker's rights. It checks the
// folder held open, not its path again, so that a symlink flipped after the open cannot swap another user's in.
func checkReach(p peercred.Peer, root *fsops.Root) error {
	if int(p.UID) == os.Getuid() {
		return nil
	}
	fi, err := os.Stat(root.FDPath())
	if err != nil {
		return fmt.Errorf("root %s: %w", root.Path(), ErrRootNotFolder)
	}
	if !ownedBy(fi, p.UID) {
		return fmt.Errorf("root %s is not owned by uid %d; a broker serving other users opens only their own folders: %w",
			root.Path(), p.UID, ErrNotOwner)
	}
	return nil
}

// maxSessions bounds the open sessions of one uid: defends against a client exhausting the broker's file
// descriptors and memory (each session holds its root open), which a shared broker's other users would feel.
const maxSessions = 1024

func (s *Service) sessionsOf(uid uint32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sess := range s.sessions {
		if sess.owner.UID == uid {
			n++
		}
	}
	return n
}

// ConnClosed ends the sessions of a connection that closed: no other connection may use them, so they would
// only hold their roots open until the broker stops (a serving broker may run for months).
func (s *Service) ConnClosed(p peercred.Peer) {
	s.mu.Lock()
	var gone []*session
	for id, sess := range s.sessions {
		if sess.owner.Conn == p.Conn && sess.owner.UID == p.UID {
			gone = append(gone, sess)
			delete(s.sessions, id)
		}
	}
	s.mu.Unlock()
	// Not on the closing goroutine: ending a session waits for its calls, whose streams end with this connection.
	go func() {
		for _, sess := range gone {
			sess.end(ErrShutdown)
			sess.close()
		}
	}()
}

// session finds a session of the calling connection; defends against a client using another client's session.
func (s *Service) session(ctx context.Context, id string) (*session, error) {
	p, _ := peercred.FromContext(ctx)
	s.mu.Lock()
	sess := s.sessions[id]
	s.mu.Unlock()
	if sess == nil {
		return nil, fmt.Errorf("session %q: %w", id, ErrUnknownSession)
	}
	if sess.owner.Conn != p.Conn || sess.owner.UID != p.UID {
		return nil, fmt.Errorf("session %q: %w", id, ErrNotOwner)
	}
	return sess, nil
}

// CloseSession ends a session and kills its commands.
func (s *Service) CloseSession(ctx context.Context, req *execv1.CloseSessionRequest) (*execv1.CloseSessionResponse, error) {
	sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.mu.Unlock()
	sess.end(ErrShutdown)
	sess.close()
	return &execv1.CloseSessionResponse{}, nil
}

// SetMode changes the mode of a session.
func (s *Service) SetMode(ctx context.Context, req *execv1.SetModeRequest) (*execv1.SetModeResponse, error) {
	sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	switch req.GetMode() {
	case execv1.Mode_MODE_BUILD, execv1.Mode_MODE_PLAN:
	default:
		return nil, toStatus(fmt.Errorf("mode %v: %w", req.GetMode(), ErrBadMode))
	}
	sess.mu.Lock()
	changed := sess.mode != req.GetMode()
	sess.mode = req.GetMode()
	sess.mu.Unlock()
	res := &execv1.SetModeResponse{}
	if req.GetMode() == execv1.Mode_MODE_PLAN {
		// Plan mode's commands cannot write the project: a background process started in build mode could.
		if ids := sess.procs.stopAll("the session switched to plan mode"); len(ids) > 0 {
			res.Notices = append(res.Notices, fmt.Sprintf("plan mode stopped the background processes %s: in plan mode "+
				"commands cannot write the project.", strings.Join(ids, ", ")))
		}
	}
	if changed {
		// A stdio server runs under the mode it started in: it starts again under the new one (plan: read-only).
		sess.mcpModeChanged()
	}
	return res, nil
}
