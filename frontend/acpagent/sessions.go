package acpagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// titleLimit is the most characters of a session's title.
const titleLimit = 100

// rulesNotice says what a load or resume does not bring back.
const rulesNotice = "this session was reopened; answers of \"Allow for this session\" ended with the session " +
	"that gave them, so Garuda asks again."

// compactionRecord is a compaction in the session file: what it did, and the conversation it left.
type compactionRecord struct {
	Compaction any             `json:"compaction"`
	History    []model.Message `json:"history"`
}

// configRecord is a config option's new value in the session file.
type configRecord struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// noteDiff keeps the diff a call's question showed, for the call's final update.
func (t *acpTurn) noteDiff(id string, content []acp.ToolCallContent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range content {
		if c.Diff != nil {
			if t.diffs == nil {
				t.diffs = map[string]acp.ToolCallContent{}
			}
			t.diffs[id] = c
		}
	}
}

// beginTranscript records the user's prompt as the editor showed it and, on the first prompt, gives the session
// its title.
func (s *acpSession) beginTranscript(ctx context.Context, blocks []acp.ContentBlock, text string) {
	s.tr.user(blocks)
	s.mu.Lock()
	first := s.title == ""
	if first {
		s.title = titleOf(text)
	}
	title := s.title
	s.mu.Unlock()
	if first && title != "" {
		s.record(recTitle, title)
		s.update(ctx, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionSessionInfoUpdate{Title: acp.Ptr(title)}})
	}
}

// titleOf is a session's title from its first prompt: the first line with text, made visible, at most titleLimit
// characters.
func titleOf(text string) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(visible.OneLine(line))
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > titleLimit {
			r := []rune(line)
			line = strings.TrimSpace(string(r[:titleLimit-1])) + "…"
		}
		return line
	}
	return ""
}

// LoadSession reopens an earlier session and replays it, every update before the response.
func (s *server) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	sess, rest, err := s.reopen(ctx, string(p.SessionId), p.Cwd, p.McpServers)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	sess.sendCommands(rest.commands)
	if err := sess.replay(rest); err != nil {
		s.opts.Broker.CloseSession(context.WithoutCancel(ctx), &execv1.CloseSessionRequest{SessionId: sess.id})
		sess.closeRecords()
		return acp.LoadSessionResponse{}, requestError("replay the session: " + err.Error())
	}
	if err := s.register(ctx, sess); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	return acp.LoadSessionResponse{Modes: modes(sess.currentMode()), ConfigOptions: sess.configOptions()}, nil
}

// ResumeSession reopens an earlier session without the replay.
func (s *server) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	sess, rest, err := s.reopen(ctx, string(p.SessionId), p.Cwd, p.McpServers)
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	sess.sendCommands(rest.commands)
	if err := s.register(ctx, sess); err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	return acp.ResumeSessionResponse{Modes: modes(sess.currentMode()), ConfigOptions: sess.configOptions()}, nil
}

// replay sends the recorded updates. Each decoded when the file was read (a hand-edited one is refused there), it
// goes out as recorded: one line each through the writer the SDK uses, which writes each message whole. Nothing
// paces it: an editor built on the Go SDK closes the connection when more than 1,024 notifications wait to be
// handled, which a long session's replay can reach when that editor handles them slowly.
func (s *acpSession) replay(r *restored) error {
	head, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
	}{"2.0", acp.ClientMethodSessionUpdate})
	sid, _ := json.Marshal(s.id)
	var line []byte
	for _, raw := range r.raw {
		line = append(line[:0], head[:len(head)-1]...)
		line = append(line, `,"params":{"sessionId":`...)
		line = append(line, sid...)
		line = append(line, `,"update":`...)
		line = append(line, raw...)
		line = append(line, "}}\n"...)
		if _, err := s.srv.out.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// sendCommands sends the / menu of a reopened session. It goes before the response, whose JSON names no session
// to wait for, and before the replay, which is exactly what the editor saw.
func (s *acpSession) sendCommands(cmds []*execv1.CommandInfo) {
	u := &acp.SessionAvailableCommandsUpdate{AvailableCommands: availableCommands(cmds)}
	s.send(s.srv.base, acp.SessionUpdate{AvailableCommandsUpdate: u})
}

func (s *acpSession) currentMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// reopen opens an earlier session through the broker and rebuilds it from its file. The session is not
// registered: the caller sends what it must first.
func (s *server) reopen(ctx context.Context, id, cwd string, mcp []acp.McpServer) (*acpSession, *restored, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, nil, invalidParams(fmt.Sprintf("cwd must be an absolute path to a folder, got %q", cwd))
	}
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		return nil, nil, requestError("the agent is shutting down")
	case s.sessions[id] != nil:
		s.mu.Unlock()
		return nil, nil, invalidParams(fmt.Sprintf("session %q is open already; close it first (session/close)", id))
	case s.loading[id]:
		s.mu.Unlock()
		return nil, nil, invalidParams(fmt.Sprintf("session %q is being loaded already", id))
	}
	if s.loading == nil {
		s.loading = map[string]bool{}
	}
	s.loading[id] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.loading, id)
		s.mu.Unlock()
	}()

	b := s.opts.Broker
	servers, mcpNotices := mcpServers(mcp)
	opened, entries, err := s.resumeBroker(ctx, id, filepath.Clean(cwd), servers)
	if err != nil {
		return nil, nil, err
	}
	fail := func(e error) (*acpSession, *restored, error) {
		if _, err := b.CloseSession(context.WithoutCancel(ctx), &execv1.CloseSessionRequest{SessionId: id}); err != nil {
			s.opts.Log.Warn("close the broker session of a failed load", "session", id, "err", err)
		}
		return nil, nil, e
	}
	rest, err := restore(entries)
	if err != nil {
		return fail(invalidParams(fmt.Sprintf("session %s: its file cannot be replayed: %v", id, err)))
	}
	rest.commands = opened.GetCommands()
	name := rest.config[configModel]
	if name == "" {
		name = s.opts.Model
	}
	prep, err := b.Prepare(ctx, &execv1.PrepareRequest{Model: name, EnvKeys: EnvKeys(s.opts.Getenv)})
	if err != nil {
		return fail(requestError("prepare the session: " + brokerconn.Words(err).Error()))
	}
	if msg := prep.GetAuthRequired(); msg != "" {
		return fail(authRequired(msg))
	}
	ms := prep.GetReady()
	if ms == nil {
		return fail(requestError("prepare the session: the broker gave no model settings"))
	}
	client, err := s.opts.NewModel(ms, s.apiKey(ms))
	if err != nil {
		return fail(requestError(fmt.Sprintf("set up the model %s: %v", ms.GetName(), err)))
	}
	sess := s.buildSession(opened, ms, client, cwd)
	sess.setModel(ms, client, prep.GetModels())
	if l := rest.config[configThought]; slices.Contains(levels(ms.GetReasoning()), l) {
		sess.cfg.thought = l
	}
	sess.conv.History = rest.history
	sess.resumed = true
	sess.title = rest.title
	sess.questions = rest.questions
	if rest.mode == agent.ModePlan {
		if _, err := b.SetMode(ctx, &execv1.SetModeRequest{SessionId: id, Mode: execv1.Mode_MODE_PLAN}); err != nil {
			sess.closeRecords()
			return fail(requestError("set the mode: " + brokerconn.Words(err).Error()))
		}
		sess.mode = agent.ModePlan
	}
	sess.notices = append(prep.GetNotices(), sess.notices...)
	sess.notices = append(sess.notices, rulesNotice)
	sess.notices = append(sess.notices, mcpNotices...)
	return sess, rest, nil
}

// apiKey is the model's key: the front end's environment first, else what the broker read from the credentials.
func (s *server) apiKey(ms *execv1.ModelSettings) string {
	if env := ms.GetApiKeyEnv(); env != "" && s.opts.Getenv(env) != "" {
		return s.opts.Getenv(env)
	}
	return ms.GetApiKey()
}

// resumeBroker reopens the broker session and reads its file's entries.
func (s *server) resumeBroker(ctx context.Context, id, root string,
	servers []*execv1.McpServer) (*execv1.OpenSessionResponse, []*execv1.SessionEntry, error) {
	b := s.opts.Broker
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := b.ResumeSession(sctx, &execv1.ResumeSessionRequest{SessionId: id, Root: root, McpServers: servers})
	if err != nil {
		return nil, nil, sessionRPCError(id, err)
	}
	first, err := stream.Recv()
	if err != nil {
		return nil, nil, sessionRPCError(id, err)
	}
	opened := first.GetOpened()
	if opened == nil {
		return nil, nil, requestError("load the session: the broker answered out of order")
	}
	var entries []*execv1.SessionEntry
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return opened, entries, nil
		}
		if err != nil {
			s.opts.Broker.CloseSession(context.WithoutCancel(ctx), &execv1.CloseSessionRequest{SessionId: id})
			return nil, nil, sessionRPCError(id, err)
		}
		entries = append(entries, m.GetEntries().GetEntries()...)
	}
}

// sessionRPCError is the editor's error for a broker refusal of a session by id.
func sessionRPCError(id string, err error) error {
	msg := brokerconn.Words(err).Error()
	switch status.Code(err) {
	case codes.NotFound:
		return invalidParams(fmt.Sprintf("unknown session %q: Garuda has no session file of that id", id))
	case codes.InvalidArgument, codes.PermissionDenied, codes.FailedPrecondition:
		return invalidParams(msg)
	}
	return requestError("load the session: " + msg)
}

// restored is a session rebuilt from its file.
type restored struct {
	raw       []json.RawMessage // the replay: each update as recorded
	history   []model.Message   // the conversation the model goes on with
	mode      string
	title     string
	config    map[string]string
	questions int
	commands  []*execv1.CommandInfo
}

// restore rebuilds a session from its file's entries. An entry that does not decode is an error naming it.
func restore(entries []*execv1.SessionEntry) (*restored, error) {
	r := &restored{mode: agent.ModeBuild, config: map[string]string{}}
	open := map[string]bool{} // tool calls with no final update yet
	var order []string
	for i, e := range entries {
		bad := func(err error) error { return fmt.Errorf("entry %d (%s): %v", i+1, e.GetKind(), err) }
		data := e.GetData()
		switch e.GetKind() {
		case recUpdate:
			kind, id, err := checkUpdate(data)
			if err != nil {
				return nil, bad(err)
			}
			switch kind {
			case "tool_call":
				open[id] = true
				order = append(order, id)
				if n, ok := strings.CutPrefix(id, "garuda-question-"); ok {
					if k, err := strconv.Atoi(n); err == nil {
						r.questions = max(r.questions, k)
					}
				}
			case "tool_call_update":
				delete(open, id)
			}
			r.raw = append(r.raw, data)
		case recMessage:
			var m model.Message
			if err := json.Unmarshal(data, &m); err != nil || (m.Role != model.RoleUser && m.Role != model.RoleAssistant) {
				return nil, bad(fmt.Errorf("not a message of the conversation: %v", err))
			}
			r.history = append(r.history, m)
		case recCompaction:
			var c compactionRecord
			if err := json.Unmarshal(data, &c); err != nil {
				return nil, bad(err)
			}
			r.history = c.History
		case recMode:
			var m string
			if err := json.Unmarshal(data, &m); err != nil || (m != agent.ModeBuild && m != agent.ModePlan) {
				return nil, bad(fmt.Errorf("not a mode: %s", data))
			}
			r.mode = m
		case recConfig:
			var c configRecord
			if err := json.Unmarshal(data, &c); err != nil || c.ID == "" {
				return nil, bad(fmt.Errorf("not a config option: %s", data))
			}
			r.config[c.ID] = c.Value
		case recTitle:
			if err := json.Unmarshal(data, &r.title); err != nil {
				return nil, bad(err)
			}
		}
	}
	// A call that a crash left running ends failed, so that the editor shows no call as running.
	for _, id := range order {
		if open[id] {
			end, _ := json.Marshal(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
				ToolCallId: acp.ToolCallId(id), Status: acp.Ptr(acp.ToolCallStatusFailed),
				Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock("The session ended before this call finished."))},
			}})
			r.raw = append(r.raw, end)
		}
	}
	r.history = repairHistory(r.history)
	return r, nil
}

// checkUpdate decodes a recorded update as its variant (the one the discriminator names, of those Garuda sends):
// a hand-edited one that the editor could not read is refused.
func checkUpdate(data []byte) (kind, toolCallID string, err error) {
	// The discriminator, found without a decoding pass of its own: a quote inside a string is escaped, so the
	// key's only unescaped occurrence is the update's own.
	_, rest, found := bytes.Cut(data, []byte(`"sessionUpdate":"`))
	end := bytes.IndexByte(rest, '"')
	if !found || end < 0 {
		return "", "", errors.New("no sessionUpdate")
	}
	kind = string(rest[:end])
	switch kind {
	case "tool_call":
		var v acp.SessionUpdateToolCall
		err = json.Unmarshal(data, &v)
		toolCallID = string(v.ToolCallId)
	case "tool_call_update":
		var v acp.SessionToolCallUpdate
		err = json.Unmarshal(data, &v)
		toolCallID = string(v.ToolCallId)
	case "user_message_chunk":
		err = json.Unmarshal(data, &acp.SessionUpdateUserMessageChunk{})
	case "agent_message_chunk":
		err = json.Unmarshal(data, &acp.SessionUpdateAgentMessageChunk{})
	case "agent_thought_chunk":
		err = json.Unmarshal(data, &acp.SessionUpdateAgentThoughtChunk{})
	case "plan":
		err = json.Unmarshal(data, &acp.SessionUpdatePlan{})
	case "current_mode_update":
		err = json.Unmarshal(data, &acp.SessionCurrentModeUpdate{})
	case "config_option_update":
		err = json.Unmarshal(data, &acp.SessionConfigOptionUpdate{})
	case "session_info_update":
		err = json.Unmarshal(data, &acp.SessionSessionInfoUpdate{})
	default:
		return "", "", fmt.Errorf("%q is not an update Garuda sends", kind)
	}
	return kind, toolCallID, err
}

// repairHistory gives every tool_use of the last assistant message a result, as the loop does for calls it did not
// run: a file cut by a crash mid-call would otherwise make the provider refuse the next request.
func repairHistory(h []model.Message) []model.Message {
	if len(h) == 0 || h[len(h)-1].Role != model.RoleAssistant {
		return h
	}
	var results []model.Block
	for _, b := range h[len(h)-1].Content {
		if b.Type == model.BlockToolUse {
			results = append(results, model.Block{Type: model.BlockToolResult, ToolUseID: b.ToolUseID, IsError: true,
				Text: "Not run: the session ended before the call finished."})
		}
	}
	if len(results) == 0 {
		return h
	}
	return append(h, model.Message{Role: model.RoleUser, Content: results})
}

// ListSessions lists the user's sessions through the broker, newest first, filtered by cwd.
func (s *server) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	req := &execv1.ListSessionsRequest{}
	if p.Cwd != nil {
		if !filepath.IsAbs(*p.Cwd) {
			return acp.ListSessionsResponse{}, invalidParams(fmt.Sprintf("cwd must be an absolute path, got %q", *p.Cwd))
		}
		req.Root = filepath.Clean(*p.Cwd)
	}
	if p.Cursor != nil {
		req.Cursor = *p.Cursor
	}
	res, err := s.opts.Broker.ListSessions(ctx, req)
	if err != nil {
		if status.Code(err) == codes.InvalidArgument {
			return acp.ListSessionsResponse{}, invalidParams(brokerconn.Words(err).Error())
		}
		return acp.ListSessionsResponse{}, requestError("list the sessions: " + brokerconn.Words(err).Error())
	}
	out := acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}
	for _, m := range res.GetSessions() {
		info := acp.SessionInfo{SessionId: acp.SessionId(m.GetSessionId()), Cwd: m.GetRoot(), UpdatedAt: acp.Ptr(m.GetUpdatedAt())}
		if t := visible.OneLine(m.GetTitle()); t != "" {
			info.Title = acp.Ptr(t)
		}
		out.Sessions = append(out.Sessions, info)
	}
	if c := res.GetNextCursor(); c != "" {
		out.NextCursor = acp.Ptr(c)
	}
	return out, nil
}

// CloseSession cancels what runs in the session, writes what is left of its file and ends its broker session.
func (s *server) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	id := string(p.SessionId)
	s.mu.Lock()
	sess := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if sess == nil {
		return acp.CloseSessionResponse{}, invalidParams(fmt.Sprintf("unknown session %q (never opened here, or closed already)", id))
	}
	sess.abort(errCancelled)
	sess.waitIdle(closeTimeout)
	sess.closeRecords()
	sess.endHooks("other", sessionCloseWait)
	if _, err := s.opts.Broker.CloseSession(context.WithoutCancel(ctx), &execv1.CloseSessionRequest{SessionId: id}); err != nil {
		return acp.CloseSessionResponse{}, requestError("close the session: " + brokerconn.Words(err).Error())
	}
	return acp.CloseSessionResponse{}, nil
}

// waitIdle waits (at most d) until no turn of the session runs.
func (s *acpSession) waitIdle(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		idle := s.turn == nil
		s.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
