package acpagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/acpagent/acpinit"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Options is what `garuda acp` passes to Serve.
type Options struct {
	// Broker is the connection to garuda-exec; BrokerDone closes when the broker is gone.
	Broker     execv1.ExecServiceClient
	BrokerDone <-chan struct{}
	// Version is the binary's version, shown to the editor as agentInfo.version.
	Version string
	// Model is --model or GARUDA_MODEL; empty means the default of models.json.
	Model string
	// Getenv reads the front end's environment (provider keys); nil means os.Getenv.
	Getenv func(string) string
	// NewModel makes the model client of a session; nil means model.New.
	NewModel func(ms *execv1.ModelSettings, apiKey string) (model.Client, error)
	// Log receives diagnostics (stderr); nil means the default logger.
	Log *slog.Logger
	// Ask, if set, sees every question of the broker before the client does (garuda run answers by its --allow-*
	// flags there): when it answers (ok), session/request_permission is not sent.
	Ask func(ctx context.Context, sessionID string, q *execv1.Question) (c execv1.Choice, ok bool)
	// MaxSteps, if above zero, bounds the model requests of a turn in place of the model's setting (--max-steps).
	MaxSteps int
}

// ErrBrokerGone is what Serve returns when the broker exits under it.
var ErrBrokerGone = errors.New("the broker (garuda-exec) exited unexpectedly")

// closeTimeout bounds how long shutdown waits for the broker to close each session and for prompts to end.
const closeTimeout = 10 * time.Second

// Serve speaks ACP on in and out until in closes (every session is then closed through the broker, and Serve returns
// nil), ctx ends (the same), or the broker is gone (running prompts fail with a JSON-RPC error that says so, and
// Serve returns ErrBrokerGone).
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.NewModel == nil {
		opts.NewModel = NewModel
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Broker == nil {
		return errors.New("acp: no broker connection")
	}
	hw := newHookWriter(out)
	srv := &server{opts: opts, out: hw, sessions: map[string]*acpSession{}, base: context.WithoutCancel(ctx), ready: make(chan struct{})}
	conn := acp.NewAgentSideConnection(srv, hw, newInbox(in, srv))
	conn.SetLogger(opts.Log)
	srv.conn = conn
	close(srv.ready)

	var err error
	select {
	case <-conn.Done():
	case <-ctx.Done():
	case <-opts.BrokerDone:
		err = ErrBrokerGone
		srv.brokerGone(hw)
	}
	srv.shutdown(err == nil)
	return err
}

// NewModel is the default Options.NewModel: the client of the provider the broker's settings name.
func NewModel(ms *execv1.ModelSettings, apiKey string) (model.Client, error) {
	return model.New(ProviderConfig(ms, apiKey))
}

// ProviderConfig is how the broker's settings and the key reach the provider.
func ProviderConfig(ms *execv1.ModelSettings, apiKey string) model.ProviderConfig {
	return model.ProviderConfig{
		Type:            ms.GetType(),
		BaseURL:         ms.GetBaseUrl(),
		APIKey:          apiKey,
		Model:           ms.GetModelId(),
		MaxOutputTokens: int(ms.GetMaxOutputTokens()),
	}
}

// server is the ACP agent of one connection.
type server struct {
	opts Options
	// conn is set once the SDK has made it, which is after it may have started reading: use client().
	conn  *acp.AgentSideConnection
	ready chan struct{}
	out   *hookWriter
	// base outlives every request: updates sent after a cancel use it (the SDK cancels the prompt's own context).
	base context.Context

	mu       sync.Mutex
	sessions map[string]*acpSession
	loading  map[string]bool // ids being loaded or resumed
	closing  bool
	prompts  sync.WaitGroup
}

var _ acp.Agent = (*server)(nil)

// client is the connection, for requests and notifications to the editor.
func (s *server) client() *acp.AgentSideConnection {
	<-s.ready
	return s.conn
}

func (s *server) lookup(id acp.SessionId) (*acpSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[string(id)]
	if sess == nil {
		return nil, invalidParams(fmt.Sprintf("unknown session %q", string(id)))
	}
	return sess, nil
}

// brokerGone fails every running prompt with a clear error and waits (bounded) until those answers are written.
func (s *server) brokerGone(hw *hookWriter) {
	s.mu.Lock()
	s.closing = true
	var written []<-chan struct{}
	for _, sess := range s.sessions {
		sess.mu.Lock()
		running := sess.turn != nil
		sess.mu.Unlock()
		if running {
			// Watch before the abort, so that a quick answer cannot be missed.
			written = append(written, hw.watch(brokerGoneMarker(sess.id)))
			sess.abort(errBrokerExited)
		}
	}
	s.mu.Unlock()
	tm := time.NewTimer(closeTimeout)
	defer tm.Stop()
	for _, w := range written {
		select {
		case <-w:
		case <-tm.C:
			return
		}
	}
}

// shutdown ends every turn and, when the broker is still there, closes every broker session (which kills its
// commands).
func (s *server) shutdown(closeBroker bool) {
	s.mu.Lock()
	s.closing = true
	sessions := make([]*acpSession, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.sessions = map[string]*acpSession{}
	s.mu.Unlock()
	for _, sess := range sessions {
		sess.abort(errShutdown)
	}
	// The session files get what the turns left (their last records) before the broker sessions end.
	waitPrompts(&s.prompts, closeTimeout, s.opts.Log)
	for _, sess := range sessions {
		sess.closeRecords()
	}
	if closeBroker {
		// The SessionEnd hooks, all at once and bounded: the editor has gone, the agent is on its way out.
		var ends sync.WaitGroup
		for _, sess := range sessions {
			ends.Go(func() { sess.endHooks("prompt_input_exit", sessionEndWait) })
		}
		ends.Wait()
		ctx, cancel := context.WithTimeout(s.base, closeTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for _, sess := range sessions {
			wg.Go(func() {
				if _, err := s.opts.Broker.CloseSession(ctx, &execv1.CloseSessionRequest{SessionId: sess.id}); err != nil {
					s.opts.Log.Warn("close the broker session", "session", sess.id, "err", err)
				}
			})
		}
		wg.Wait()
	}
}

// waitPrompts waits, at most d, for the running prompts to end.
func waitPrompts(prompts *sync.WaitGroup, d time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() { prompts.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		log.Warn("prompts still running at shutdown")
	}
}

// Initialize answers as acpinit does (and garuda acp's early answer, given from its package initialisation).
func (s *server) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acpinit.Answer(p, s.opts.Version), nil
}

// Authenticate answers {}: the one method is a terminal method, which editors run themselves.
func (s *server) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

// Cancel aborts the session's running turn (a prompt that had not begun when the cancel was read stops as it
// begins: see inbox).
func (s *server) Cancel(ctx context.Context, p acp.CancelNotification) error {
	sess, err := s.lookup(p.SessionId)
	if err != nil {
		return nil // a cancel for a session that is gone has nothing to stop
	}
	sess.cancelTurn()
	return nil
}

// SetSessionMode changes the mode from the next turn on.
func (s *server) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	sess, err := s.lookup(p.SessionId)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	if err := sess.setMode(ctx, string(p.ModeId)); err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	sess.modeChanged()
	return acp.SetSessionModeResponse{}, nil
}

// brokerGoneMarker is a piece of the JSON of a prompt's error response when the broker is gone, unique per session.
func brokerGoneMarker(sessionID string) string {
	return fmt.Sprintf(`"reason":"broker_exited","sessionId":%q`, sessionID)
}

// EnvKeys names the variables that are set, so that the broker can tell which provider key variable (whatever a
// provider's api_key_env calls it) the front end has. Names only: the values never leave the front end.
func EnvKeys(getenv func(string) string) []string {
	names := []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "" {
			names = append(names, name)
		}
	}
	var set []string
	for _, name := range names {
		if getenv(name) != "" && !slices.Contains(set, name) {
			set = append(set, name)
		}
	}
	return set
}
