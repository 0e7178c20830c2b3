package acpagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/tools"
	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Causes of a turn's end other than the model's.
var (
	errCancelled    = errors.New("the editor cancelled the turn")
	errShutdown     = errors.New("the agent is shutting down")
	errBrokerExited = ErrBrokerGone
)

// modes is the session modes state of the spec.
func modes(current string) *acp.SessionModeState {
	return &acp.SessionModeState{
		CurrentModeId: acp.SessionModeId(current),
		AvailableModes: []acp.SessionMode{
			{Id: agent.ModeBuild, Name: "Build", Description: acp.Ptr("Edits ask first; commands run in the sandbox.")},
			{Id: agent.ModePlan, Name: "Plan", Description: acp.Ptr("Reads and plans. No edits; commands cannot write the project.")},
		},
	}
}

func brokerMode(m string) execv1.Mode {
	if m == agent.ModePlan {
		return execv1.Mode_MODE_PLAN
	}
	return execv1.Mode_MODE_BUILD
}

// authRequired is ACP's "auth required" (-32000) with Garuda's message, so the editor can offer its sign-in.
func authRequired(msg string) *acp.RequestError {
	return &acp.RequestError{Code: -32000, Message: "Authentication required: " + msg, Data: map[string]any{"message": msg}}
}

// invalidParams is an invalid-params error (-32602) whose message says what is wrong: editors show the message (the
// SDK's own says only "Invalid params").
func invalidParams(msg string) *acp.RequestError {
	return &acp.RequestError{Code: -32602, Message: msg, Data: map[string]any{"error": msg}}
}

// requestError is a plain JSON-RPC error whose message is the failure's own.
func requestError(msg string) *acp.RequestError {
	return &acp.RequestError{Code: -32603, Message: msg, Data: map[string]any{"error": msg}}
}

// NewSession reads the configuration afresh through the broker, opens a broker session on cwd and answers with the
// modes; the / menu follows once the response is on the wire.
func (s *server) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if p.Cwd == "" || !filepath.IsAbs(p.Cwd) {
		return acp.NewSessionResponse{}, invalidParams(fmt.Sprintf("cwd must be an absolute path to a folder, got %q", p.Cwd))
	}
	b := s.opts.Broker
	// The configuration and the broker session do not depend on each other: both are asked at once, and a session
	// opened for a configuration that turns out unusable is closed again.
	servers, mcpNotices := mcpServers(p.McpServers)
	type opened struct {
		res *execv1.OpenSessionResponse
		err error
	}
	openc := make(chan opened, 1)
	go func() {
		res, err := b.OpenSession(ctx, &execv1.OpenSessionRequest{Root: filepath.Clean(p.Cwd), Mode: execv1.Mode_MODE_BUILD,
			McpServers: servers})
		openc <- opened{res, err}
	}()
	prep, err := b.Prepare(ctx, &execv1.PrepareRequest{Model: s.opts.Model, EnvKeys: EnvKeys(s.opts.Getenv)})
	var client model.Client
	var ms *execv1.ModelSettings
	var fail error
	switch {
	case err != nil:
		fail = requestError("prepare the session: " + brokerconn.Words(err).Error())
	case prep.GetAuthRequired() != "":
		fail = authRequired(prep.GetAuthRequired())
	case prep.GetReady() == nil:
		fail = requestError("prepare the session: the broker gave no model settings")
	default:
		ms = prep.GetReady()
		if client, err = s.opts.NewModel(ms, s.apiKey(ms)); err != nil {
			fail = requestError(fmt.Sprintf("set up the model %s: %v", ms.GetName(), err))
		}
	}
	o := <-openc
	open, err := o.res, o.err
	if fail != nil {
		if err == nil {
			go b.CloseSession(context.WithoutCancel(ctx), &execv1.CloseSessionRequest{SessionId: open.GetSessionId()})
		}
		return acp.NewSessionResponse{}, fail
	}
	if err != nil {
		if status.Code(err) == codes.InvalidArgument {
			return acp.NewSessionResponse{}, invalidParams(brokerconn.Words(err).Error()) // the broker's one sentence names the folder
		}
		return acp.NewSessionResponse{}, requestError("open the session: " + brokerconn.Words(err).Error())
	}
	sess := s.buildSession(open, ms, client, p.Cwd)
	sess.setModel(ms, client, prep.GetModels())
	sess.notices = append(prep.GetNotices(), sess.notices...)
	sess.notices = append(sess.notices, mcpNotices...)
	if err := s.register(ctx, sess); err != nil {
		return acp.NewSessionResponse{}, err
	}
	s.announce(sess, open.GetCommands())
	return acp.NewSessionResponse{SessionId: acp.SessionId(sess.id), Modes: modes(agent.ModeBuild), ConfigOptions: sess.configOptions()}, nil
}

// buildSession makes the front end's session over an opened broker session.
func (s *server) buildSession(open *execv1.OpenSessionResponse, ms *execv1.ModelSettings, client model.Client, cwd string) *acpSession {
	root := open.GetRoot()
	if root == "" {
		root = filepath.Clean(cwd)
	}
	sess := &acpSession{
		srv:              s,
		id:               open.GetSessionId(),
		root:             root,
		mode:             agent.ModeBuild,
		instructions:     open.GetInstructions(),
		instructionsFile: open.GetInstructionsFile(),
		model:            ms,
		records:          make(chan record, recordQueue),
		recordsDone:      make(chan struct{}),
		hooked:           open.GetHooked(),
	}
	sess.tr = &transcript{write: sess.record}
	sess.notices = append(sess.notices, open.GetNotices()...)
	sess.commands = open.GetCommands()
	for _, c := range open.GetCommands() {
		if c.GetSkill() {
			sess.skills = append(sess.skills, agent.SkillInfo{Name: c.GetName(), Description: c.GetDescription()})
		}
	}
	sess.runner = &brokerconn.Runner{Client: s.opts.Broker, SessionID: sess.id, Approver: &approver{sess: sess}, Notice: sess.resultNotice}
	sess.conv = &agent.Conversation{
		Model:           client,
		Tools:           &sessionTools{s: sess, runner: sess.runner},
		System:          sess.systemPrompt,
		ContextWindow:   int(ms.GetContextWindow()),
		MaxOutputTokens: int(ms.GetMaxOutputTokens()),
		Limits:          agent.Limits{MaxSteps: cmp.Or(s.opts.MaxSteps, int(ms.GetMaxSteps())), MaxTokens: int(ms.GetMaxTurnTokens())},
		Record:          sess.recordAgent,
		Settle:          turnSettle,
		BeforeCompact: func(ctx context.Context, trigger string) {
			sess.hook(ctx, s.base, &execv1.HookEvent{Event: hookPreCompact, Subject: trigger})
		},
	}
	go sess.writeRecords()
	return sess
}

// turnSettle is how long a cancelled turn waits for a tool call: the broker's Result comes within brokerconn.Settle.
const turnSettle = brokerconn.Settle + time.Second

// register makes a built session reachable; when the agent is shutting down its broker session is closed instead.
func (s *server) register(ctx context.Context, sess *acpSession) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		go s.opts.Broker.CloseSession(context.WithoutCancel(ctx), &execv1.CloseSessionRequest{SessionId: sess.id})
		sess.closeRecords()
		return requestError("the agent is shutting down")
	}
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	return nil
}

// announce sends the / menu once the response that names the session is on the wire: the update must not
// overtake it.
func (s *server) announce(sess *acpSession, commands []*execv1.CommandInfo) {
	onWire := s.out.watch(fmt.Sprintf(`"sessionId":%q`, sess.id))
	go func() {
		select {
		case <-onWire:
		case <-s.client().Done():
			return
		}
		sess.update(s.base, acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{
			AvailableCommands: availableCommands(commands)}})
	}()
}

func availableCommands(cmds []*execv1.CommandInfo) []acp.AvailableCommand {
	out := []acp.AvailableCommand{}
	for _, c := range cmds {
		ac := acp.AvailableCommand{Name: visible.OneLine(c.GetName()), Description: visible.OneLine(c.GetDescription())}
		if h := c.GetArgumentHint(); h != "" {
			ac.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: visible.OneLine(h)}}
		}
		out = append(out, ac)
	}
	return out
}

// acpSession is the state of one ACP session: its broker session (through runner), its conversation (conv) and what
// the editor was shown.
type acpSession struct {
	commands         []*execv1.CommandInfo // the / menu's commands and skills, from the broker at open
	mcpPrompts       []*execv1.CommandInfo // the MCP servers' prompts last added to the menu; guarded by mu
	srv              *server
	id               string
	root             string
	instructions     string
	instructionsFile string
	runner           *brokerconn.Runner
	skills           []agent.SkillInfo // the session's skills, for the system prompt
	agentsOnce       sync.Once
	customAgents     []agent.SkillInfo // the custom agents, read at the first prompt, for the system prompt
	conv             *agent.Conversation
	tr               *transcript           // what the editor is sent, for the session file
	model            *execv1.ModelSettings // the model the session talks to, for the words of its errors
	hooked           *execv1.HookedEvents  // the hook events that do something in this session; nil: unknown, all
	webSearchAsked   bool                  // the web search consent was decided in this session (turn goroutine only)
	webSearchOK      bool

	mu   sync.Mutex
	turn *acpTurn // the running turn, nil between turns
	mode string
	// modeMu is held while the mode changes and while a turn takes or leaves it: defends against a turn that runs
	// with one mode's prompt while the broker decides in the other.
	modeMu      sync.Mutex
	pendingMode string   // a mode set during a turn, applied when it ends
	turnMode    string   // the mode of the running turn, for its system prompt
	notices     []string // lines that wait for the first prompt
	questions   int
	title       string // set from the first prompt
	cfg         modelConfig
	// hooksStarted: SessionStart was reported (at the first prompt); resumed: the session was loaded or resumed.
	hooksStarted, resumed bool

	// The editor's prompts and cancels in the order it sent them (see inbox): a cancel read after a prompt stops
	// that prompt even when the SDK runs the cancel before the prompt's turn exists.
	promptsRead   int // prompts read from the editor
	promptsBegun  int // prompts whose handler has begun
	cancelledUpTo int // promptsRead when the last cancel was read

	recMu       sync.Mutex
	recClosed   bool
	records     chan record
	recordsDone chan struct{}
	recordsOnce sync.Once
	recHold     atomic.Pointer[chan struct{}] // while set and open, queued records wait (holdRecords)
}

func (s *acpSession) systemPrompt() string {
	s.mu.Lock()
	mode := s.turnMode
	s.mu.Unlock()
	if mode == "" {
		mode = agent.ModeBuild
	}
	specs := s.runner.Specs()
	info := agent.PromptInfo{
		Root:             s.root,
		Mode:             mode,
		Date:             time.Now().Format("2006-01-02"),
		Tools:            specs,
		ToolRules:        tools.Rules(specs),
		Instructions:     s.instructions,
		InstructionsFile: s.instructionsFile,
	}
	for _, t := range specs {
		switch t.Name {
		case tools.Skill:
			info.Skills = s.skills
		case tools.Subagent:
			info.Agents = append([]agent.SkillInfo{{Name: explore.name, Description: explore.description}}, s.customAgents...)
		}
	}
	return agent.SystemPrompt(info)
}

// update sends one session/update and notes it for the session file. ctx must outlive a cancel: the final updates
// of a cancelled turn go out too.
func (s *acpSession) update(ctx context.Context, u acp.SessionUpdate) {
	s.tr.add(u)
	s.send(ctx, u)
}

// send sends one session/update, unrecorded (the replay of the file).
func (s *acpSession) send(ctx context.Context, u acp.SessionUpdate) {
	if err := s.srv.client().SessionUpdate(ctx, acp.SessionNotification{SessionId: acp.SessionId(s.id), Update: u}); err != nil {
		s.srv.opts.Log.Debug("send a session update", "session", s.id, "err", err)
	}
}

// message sends an agent_message_chunk.
func (s *acpSession) message(ctx context.Context, text string) {
	s.update(ctx, acp.UpdateAgentMessageText(text))
}

// notice sends a line from Garuda, on a line of its own.
func (s *acpSession) notice(ctx context.Context, line string) {
	line = visible.Visible(line)
	if !strings.HasPrefix(line, "Garuda:") {
		line = "Garuda: " + line
	}
	s.message(ctx, "\n"+line+"\n")
}

// promptRead notes a prompt read from the editor, before its handler runs.
func (s *acpSession) promptRead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.promptsRead++
}

// cancelRead notes a cancel read from the editor: it stops every prompt read before it, running or not yet begun.
func (s *acpSession) cancelRead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelledUpTo = s.promptsRead
}

// cancelTurn aborts the running turn when the editor's cancel was read after its prompt (a cancel that the SDK
// handles late must not stop the next prompt).
func (s *acpSession) cancelTurn() {
	s.mu.Lock()
	t := s.turn
	stop := t != nil && t.n <= s.cancelledUpTo
	s.mu.Unlock()
	if stop {
		t.cancel(errCancelled)
	}
}

// beginPrompt numbers a prompt whose handler begins, in the order the prompts were read.
func (s *acpSession) beginPrompt() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.promptsBegun++
	s.promptsRead = max(s.promptsRead, s.promptsBegun)
	return s.promptsBegun
}

// resultNotice shows a broker notice of a tool's result (a weaker sandbox, protected paths that a command changed)
// as a line from Garuda, while a turn is open; one that comes after its turn answered is dropped.
func (s *acpSession) resultNotice(line string) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.notice(line)
	}
}

// abort ends the running turn with cause; it returns the turn or nil when none runs.
func (s *acpSession) abort(cause error) *acpTurn {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.cancel(cause)
	}
	return t
}

// setMode changes the mode: at once when no turn runs, else when the running turn ends.
func (s *acpSession) setMode(ctx context.Context, mode string) error {
	if mode != agent.ModeBuild && mode != agent.ModePlan {
		return invalidParams(fmt.Sprintf("unknown mode %q (build or plan)", mode))
	}
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	s.mu.Lock()
	if s.turn != nil {
		s.pendingMode = mode
		s.mu.Unlock()
		s.record("mode", mode)
		return nil
	}
	s.mu.Unlock()
	res, err := s.srv.opts.Broker.SetMode(ctx, &execv1.SetModeRequest{SessionId: s.id, Mode: brokerMode(mode)})
	if err != nil {
		return requestError("set the mode: " + brokerconn.Words(err).Error())
	}
	s.mu.Lock()
	s.mode = mode
	s.notices = append(s.notices, res.GetNotices()...) // shown with the next prompt
	s.mu.Unlock()
	s.record("mode", mode)
	return nil
}

// applyPendingMode gives the broker a mode set during the turn that just ended; s.modeMu is held.
func (s *acpSession) applyPendingMode(ctx context.Context) {
	s.mu.Lock()
	mode := s.pendingMode
	s.pendingMode = ""
	s.mu.Unlock()
	if mode == "" {
		return
	}
	res, err := s.srv.opts.Broker.SetMode(ctx, &execv1.SetModeRequest{SessionId: s.id, Mode: brokerMode(mode)})
	if err != nil {
		s.srv.opts.Log.Warn("set the mode after the turn", "session", s.id, "err", err)
		return
	}
	s.mu.Lock()
	s.mode = mode
	s.notices = append(s.notices, res.GetNotices()...) // shown with the next prompt
	s.mu.Unlock()
}

// record is one entry of the session file, written by the broker.
type record struct {
	kind string
	data []byte
}

// recordQueue is how many entries may wait for the broker; more are dropped (with a warning).
const recordQueue = 4096

// recordAgent records what the conversation's loop reports; a compaction is kept with the conversation it left,
// so that a load can go on from it.
func (s *acpSession) recordAgent(kind string, v any) {
	switch kind {
	case recCompaction:
		v = compactionRecord{Compaction: v, History: s.conv.History}
	case recStop, "error":
		s.tr.flush() // the turn's last text before its end
	}
	s.record(kind, v)
}

// record queues an entry of the session file; entries are written in order, off the turn's path.
func (s *acpSession) record(kind string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.srv.opts.Log.Warn("encode a session record", "kind", kind, "err", err)
		return
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if s.recClosed {
		return // a record after the session closed is dropped
	}
	select {
	case s.records <- record{kind: kind, data: data}:
	default:
		s.srv.opts.Log.Warn("session records are behind; one dropped", "session", s.id, "kind", kind)
	}
}

func (s *acpSession) writeRecords() {
	defer close(s.recordsDone)
	for r := range s.records {
		if h := s.recHold.Load(); h != nil {
			<-*h
		}
		ctx, cancel := context.WithTimeout(s.srv.base, 5*time.Second)
		_, err := s.srv.opts.Broker.Record(ctx, &execv1.RecordRequest{SessionId: s.id, Kind: r.kind, Data: r.data})
		cancel()
		if err != nil && status.Code(err) != codes.Unimplemented {
			s.srv.opts.Log.Debug("record", "session", s.id, "kind", r.kind, "err", err)
		}
	}
}

// maxRecordHold bounds how long holdRecords keeps the records back: a prompt's set-up calls may wait on a person
// (an MCP server's consent), and the session file should not.
const maxRecordHold = 50 * time.Millisecond

// holdRecords keeps the session's queued records from the broker until the returned function is called (at most
// maxRecordHold). A prompt holds them until the model's first output: the broker writes a new session's file then
// (its creation, the title's sidecar, their fsyncs), which on two cores both busy until the first answer delayed the
// prompt's set-up calls and the first model request. The records are kept in order; only their write waits.
func (s *acpSession) holdRecords() (release func()) {
	hold := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(hold) }) }
	t := time.AfterFunc(maxRecordHold, open)
	s.recHold.Store(&hold)
	return func() {
		t.Stop()
		open()
	}
}

func (s *acpSession) closeRecords() {
	s.recordsOnce.Do(func() {
		s.recMu.Lock()
		s.recClosed = true
		close(s.records)
		s.recMu.Unlock()
		select {
		case <-s.recordsDone:
		case <-time.After(closeTimeout):
		}
	})
}
