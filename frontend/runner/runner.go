package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/acpagent"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/tools"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Exit codes of a run, by how it ended.
const (
	ExitOK              = 0   // end_turn
	ExitUsage           = 2   // bad flags or arguments
	ExitSetup           = 3   // no model, a broken configuration, a project folder Garuda cannot open
	ExitRefusal         = 4   // the model refused
	ExitMaxTokens       = 5   // the model hit its output limit
	ExitMaxTurnRequests = 6   // the turn hit --max-steps, its token budget, or the repeated-call stop
	ExitModel           = 7   // a model or provider error (or the broker gone)
	ExitCancelled       = 130 // Ctrl-C
	ExitClosedOutput    = 141 // stdout was closed (a pipe into head): the turn is cancelled, nothing left running
)

// stopCodes maps ACP stop reasons to exit codes.
var stopCodes = map[acp.StopReason]int{
	acp.StopReasonEndTurn:         ExitOK,
	acp.StopReasonRefusal:         ExitRefusal,
	acp.StopReasonMaxTokens:       ExitMaxTokens,
	acp.StopReasonMaxTurnRequests: ExitMaxTurnRequests,
	acp.StopReasonCancelled:       ExitCancelled,
}

// Allow is what the flags answer without asking.
type Allow struct {
	Edits          bool     // --allow-edits: writes and edits inside the project folder
	Commands       bool     // --allow-commands: sandboxed commands the policy asks about
	OutsideSandbox bool     // --dangerously-allow-outside-sandbox: commands outside the sandbox, files outside the project
	MCP            []string // --allow-mcp SERVER: the server's consent and its tool calls
	Hosts          []string // --allow-host HOST: network access to exactly that host (web_fetch, a command's connection); NormHost's spelling
	WebSearch      bool     // --allow-web-search: the provider's server-side web search (a consent per session)
}

// Options is one run.
type Options struct {
	Prompt   string
	Cwd      string // absolute
	Model    string // --model; empty: GARUDA_MODEL or the default of models.json
	Mode     string // plan or build; empty: build
	Resume   string // --resume: the session to continue; empty: a new one
	Continue bool   // --continue: continue the newest session of Cwd
	MaxSteps int
	JSON     bool // stdout carries only JSON lines
	Quiet    bool // no thoughts
	Allow    Allow
	// TTY is the terminal questions are asked on; nil: every question is answered by Allow, the rest denied.
	TTY io.ReadWriter
	// Stdout receives the answer (or the JSON lines); Stderr tool lines, thoughts, notices and the summary.
	Stdout, Stderr io.Writer
	// Styled says that Stderr is a terminal: thoughts are dimmed, a running tool call shows its elapsed time.
	Styled bool
	// Interrupt delivers Ctrl-C (os.Interrupt), SIGTERM and SIGHUP: the first cancels the turn, the second ends the
	// run at once.
	Interrupt <-chan os.Signal
	// OutputClosed closes when stdout is found closed (SIGPIPE).
	OutputClosed <-chan struct{}
	// Started, if set, is called once the model's first output (its first text, thought or tool call) is written:
	// the run's start is over.
	Started func()

	Broker     execv1.ExecServiceClient
	BrokerDone <-chan struct{}
	BrokerErr  func(context.Context) error // why the broker is gone; nil while it answers
	Version    string
	Getenv     func(string) string
}

// Run runs the prompt and returns the exit code. Errors are written to Stderr (and, with JSON, as an event).
func Run(ctx context.Context, o Options) int {
	out := newOutput(o)
	// What the first model request and its first update build at first use and does not depend on the session (the
	// tools' schemas, the ACP update the answer streams in) is built while the broker starts: the front end waits for
	// it there anyway. The provider's SDK is warmed once the session says which it is (newModel).
	go warmTools()
	ctx, stop := context.WithCancel(ctx)
	defer stop()

	// The agent reads what the client writes and the other way round.
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	served := make(chan error, 1)
	// The session's provider SDK builds what the first model request would build at first use (its encoders and
	// decoders) as soon as the session's client is made (at session/new or resume), beside the rest of session/new:
	// later, its CPU would delay the first prompt's broker calls.
	// Its first connection is dialled then too: the first request follows the session at once.
	var warmOnce sync.Once
	newModel := func(ms *execv1.ModelSettings, apiKey string) (model.Client, error) {
		warmOnce.Do(func() { go warm(ctx, ms.GetType()) })
		cfg := acpagent.ProviderConfig(ms, apiKey)
		cfg.Preconnect = true
		return model.New(cfg)
	}
	go func() {
		err := acpagent.Serve(ctx, agentIn, agentOut, acpagent.Options{
			Broker: o.Broker, BrokerDone: o.BrokerDone, Version: o.Version, Model: o.Model, Getenv: o.Getenv,
			MaxSteps: o.MaxSteps, Ask: out.ask, NewModel: newModel,
			Log: slog.New(slog.NewTextHandler(o.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		agentOut.Close()
		served <- err
	}()
	conn := acp.NewClientSideConnection(out, clientOut, clientIn)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	finish := func(code int) int {
		clientOut.Close() // the agent's input ends: it closes the broker session, which kills what still runs
		select {
		case err := <-served:
			if err != nil && code == ExitOK {
				out.fail(err.Error())
				code = ExitModel
			}
		case <-time.After(15 * time.Second):
			out.fail("the agent did not shut down within 15 s")
		}
		return code
	}

	// A broker that could not be reached ends ctx with the reason, and one that is gone says why: that, not the
	// agent's words for it, is said.
	setupFailed := func(err error) int {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		} else if o.BrokerErr != nil {
			if why := o.BrokerErr(ctx); why != nil {
				err = why
			}
		}
		out.fail(message(err))
		return finish(ExitSetup)
	}
	// No initialize: the agent is this program's own, at its own protocol version, and its answer (acpinit's: the
	// capabilities an editor learns) is state neither side keeps. Its first use of the SDK's types cost about 1 ms of
	// CPU on the way to the first answer.
	id, err := openSession(ctx, conn, o)
	if err != nil {
		return setupFailed(err)
	}
	out.begin(string(id))
	if o.Mode != "" {
		if _, err := conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: id, ModeId: acp.SessionModeId(o.Mode)}); err != nil {
			out.fail(message(err))
			return finish(ExitUsage)
		}
	}

	type answer struct {
		resp acp.PromptResponse
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(o.Prompt)}})
		answered <- answer{resp, err}
	}()
	var cancelOnce sync.Once
	cancelTurn := func() {
		cancelOnce.Do(func() { conn.Cancel(context.WithoutCancel(ctx), acp.CancelNotification{SessionId: id}) })
	}
	interrupts, closedOut := o.Interrupt, o.OutputClosed
	for {
		select {
		case a := <-answered:
			out.endLine()
			if a.err != nil {
				out.fail(message(a.err))
				out.stop("", ExitModel)
				return finish(ExitModel)
			}
			code, ok := stopCodes[a.resp.StopReason]
			if !ok {
				code = ExitModel
			}
			if out.closed() {
				code = ExitClosedOutput
			}
			out.stop(string(a.resp.StopReason), code)
			return finish(code)
		case sig := <-interrupts:
			if out.cancelling() {
				out.note("stopping now")
				stop()
				code := finish(ExitCancelled)
				// Last, once the agent has said all it will: what changed, and --json's stop event.
				out.stop(string(acp.StopReasonCancelled), code)
				return code
			}
			if sig == os.Interrupt {
				out.note("cancelling (Ctrl-C again to stop at once)")
			} else {
				out.note(fmt.Sprintf("cancelling: %v", sig))
			}
			cancelTurn()
		case <-closedOut:
			closedOut = nil
			out.markClosed()
			cancelTurn()
		case <-o.BrokerDone:
			out.fail(acpagent.ErrBrokerGone.Error())
			code := finish(ExitModel)
			out.stop("", code)
			return code
		}
	}
}

// warmTools builds once what the first model request and its first streamed update would build at first use and
// that does not depend on the provider: the tools' schemas, the ACP update's encoding, and the broker API's
// messages of the session's start.
func warmTools() {
	tools.Specs()
	execv1.WarmUp()
	b, _ := json.Marshal(acp.SessionNotification{SessionId: "warm", Update: acp.UpdateAgentMessageText("warm")})
	var n acp.SessionNotification
	json.Unmarshal(b, &n)
}

// warm builds once, in memory, what the first model request to a provider of type typ ("": none) would build.
func warm(ctx context.Context, typ string) {
	if typ != "" {
		model.Warm(ctx, typ, tools.Specs()[0])
	}
}

// openSession starts a new session, or continues an earlier one (from an editor or a run) without its replay.
func openSession(ctx context.Context, conn *acp.ClientSideConnection, o Options) (acp.SessionId, error) {
	id := acp.SessionId(o.Resume)
	if o.Continue {
		list, err := conn.ListSessions(ctx, acp.ListSessionsRequest{Cwd: &o.Cwd})
		if err != nil {
			return "", err
		}
		if len(list.Sessions) == 0 {
			return "", fmt.Errorf("--continue: no earlier session in %s; start one without --continue", o.Cwd)
		}
		id = list.Sessions[0].SessionId // newest first
	}
	if id != "" {
		_, err := conn.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: id, Cwd: o.Cwd, McpServers: []acp.McpServer{}})
		return id, err
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: o.Cwd, McpServers: []acp.McpServer{}})
	return sess.SessionId, err
}

// message is an ACP error in words: its message, without the JSON the SDK wraps it in.
func message(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		if m, ok := re.Data.(map[string]any); ok {
			if s, ok := m["error"].(string); ok && s != "" && s != re.Message {
				return fmt.Sprintf("%s: %s", re.Message, s)
			}
		}
		return re.Message
	}
	return err.Error()
}
