package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/commands"
	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/broker/config"
	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/broker/mcphost"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// mcpState is a session's MCP side: the editor's servers, the consents denied in it, and the host of the servers
// it started (made at the first mcp_start, so that a session without MCP never loads the SDK's machinery).
type mcpState struct {
	mu      sync.Mutex
	editor  []config.MCPServer
	denied  map[string]string // server → the hash of the definition denied in this session
	host    *mcphost.Host
	watches map[string]*mcpWatch // stdio server → the guard's watch it started under
	// writable: the stdio servers running with the project writable (started in build mode), which no plan-mode
	// call reaches.
	writable map[string]bool
	batch    *mcpBatch // the servers an mcp_start is starting now
	closed   bool
}

// mcpBatch is what the stdio servers of one mcp_start share, as they start together: the sandbox's spec and the
// guard's scan before them, taken once instead of once a server.
type mcpBatch struct {
	once  sync.Once
	spec  sandbox.Spec
	watch *mcpWatch
	err   error

	audited  chan struct{} // closed once the servers' records are on disk
	auditErr error
}

// mcpWatch is the guard's watch of stdio servers that started together. Its checks are shared: one that began
// after a server ended (or after a call of it) saw everything it left, so no other is needed for it.
type mcpWatch struct {
	w     *guard.Watch
	names []string // its servers, for the audit record (under mcpState.mu)
	live  int      // its servers still running (under mcpState.mu): at 0, the watch ends (guard.Watch.End)

	mu     sync.Mutex // one check at a time
	began  time.Time  // when the last check began
	unsaid []string   // the checks' lines no call's result has said yet (at most maxUnsaid)
}

// maxUnsaid bounds the guard's lines kept for the next call's result of a server that is seldom called (all of them
// are audited).
const maxUnsaid = 20

// check takes the guard's check of what the servers left, unless one began after since (its lines are audited
// either way). With say (for a call's result) it returns the lines of every check no result has said yet: a check
// while the servers run (at a change of the root) may undo what a call left before the call's own check. Without,
// they wait for the next call's result.
func (m *mcpWatch) check(s *Service, sessID, label string, since time.Time, say bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.began.After(since) {
		m.began = time.Now()
		lines, err := s.guardAfter(sessID, policy.OpMCPStart, label, m.w)
		if err != nil {
			lines = append(lines, "Warning: "+err.Error())
		}
		m.unsaid = append(m.unsaid, lines...)
		if len(m.unsaid) > maxUnsaid {
			m.unsaid = append(m.unsaid[:maxUnsaid-1], "Note: more was undone than is said here; the audit log has all of it.")
		}
	}
	if !say {
		return nil
	}
	lines := m.unsaid
	m.unsaid = nil
	return lines
}

// maxMCPArgs bounds the arguments of one MCP call (as JSON).
const maxMCPArgs = 1 << 20

// editorMCPServers checks the editor's servers of OpenSession or ResumeSession; a bad one is a notice.
func editorMCPServers(in []*execv1.McpServer) ([]config.MCPServer, []string) {
	var out []config.MCPServer
	var notices []string
	for _, m := range in {
		srv, err := config.MCPServerOf(config.MCPServer{Name: m.GetName(), Type: m.GetType(), Command: m.GetCommand(),
			Args: m.GetArgs(), Env: m.GetEnv(), URL: m.GetUrl(), Headers: m.GetHeaders()})
		if err != nil {
			notices = append(notices, err.Error()+"; it is not started")
			continue
		}
		out = append(out, srv)
	}
	return out, notices
}

// mcpServers reads the session's servers afresh: the user's $GARUDA_HOME/mcp.json, the project's .mcp.json and
// .garuda/mcp.json (through the folder the session holds open, where the read policy lets the model read them),
// then the editor's. A malformed file is a notice
// naming its line, and the other files still count; a name taken by an earlier source is kept by that one.
func (s *Service) mcpServers(sess *session) ([]config.MCPServer, []string) {
	var all []config.MCPServer
	var notices []string
	add := func(srvs []config.MCPServer) {
		for _, srv := range srvs {
			dup := false
			for _, o := range all {
				dup = dup || o.Name == srv.Name
			}
			if dup {
				notices = append(notices, fmt.Sprintf("MCP server %q in %s is defined earlier too; the earlier one counts", srv.Name, srv.Where()))
				continue
			}
			all = append(all, srv)
		}
	}
	userFile := filepath.Join(s.cfg.Home, "mcp.json")
	if data, err := readHomeFile(userFile); err != nil {
		notices = append(notices, fmt.Sprintf("read %s: %v", userFile, err))
	} else if data != nil {
		srvs, err := config.ParseMCP(userFile, data, config.MCPSourceUser)
		if err != nil {
			notices = append(notices, err.Error())
		}
		add(srvs)
	}
	allow := s.allowRead(s.state(sess))
	for _, rel := range []string{".mcp.json", filepath.Join(".garuda", "mcp.json")} {
		name := filepath.Join(sess.root, rel)
		// Seen as the read policy lets the model see it: a consent question would show a hidden file's content.
		if !allow(name) {
			continue
		}
		data, err := conffile.ReadIn(sess.fs.FDPath(), rel, maxSettings)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			notices = append(notices, fmt.Sprintf("read %s: %v", name, err))
			continue
		}
		srvs, err := config.ParseMCP(name, data, config.MCPSourceProject)
		if err != nil {
			notices = append(notices, err.Error())
		}
		add(srvs)
	}
	sess.mcp.mu.Lock()
	editor := sess.mcp.editor
	sess.mcp.mu.Unlock()
	add(editor)
	return all, notices
}

func checkMCPStart(s *Service, c *call) (*request, error) {
	r := &request{input: "start the session's MCP servers"}
	r.run = func(ctx context.Context, g *grant) (*execv1.Result, error) {
		// A prompt began (the front end sends mcp_start before the model's first request): the session's network
		// is made shortly (warmDelay), while the model answers, not at its first command, and not for a session
		// that is only opened (a holder process for each of up to 1024 open sessions).
		c.sess.net.warm()
		res, changed, err := s.mcpStart(ctx, g)
		if res != nil && res.Status != execv1.Status_STATUS_FAILED {
			// The tools of the servers that started (each after its consent), so that the front end's first model
			// request needs no McpTools call first.
			res.McpTools = mcpList(c.sess)
		}
		// The execution record names what started (the server, and the program it runs or the address it reaches),
		// what stopped and what did not start, with why. Each start was on disk before it ran (mcpStart).
		if len(changed) > 0 {
			r.input += ": " + cut(strings.Join(changed, "; "), 4096)
		}
		return res, err
	}
	return r, nil
}

// mcpStart starts the servers that are not running: each after team policy and, for a project's or the editor's,
// the user's consent (pinned to its definition's hash; a deny holds for the session). It returns what changed: the
// servers it started, each with what it runs or reaches, those it stopped, and those that did not start, with why.
func (s *Service) mcpStart(ctx context.Context, g *grant) (*execv1.Result, []string, error) {
	sess := g.c.sess
	defs, notices := s.mcpServers(sess)
	host := s.mcpHost(sess)
	if host == nil {
		return &execv1.Result{Status: execv1.Status_STATUS_FAILED, Content: "the session is closing"}, nil, nil
	}
	var start []config.MCPServer
	var changed []string
	wasRunning := map[string]bool{}
	for _, d := range defs {
		if host.RunningAs(d.Name, d.Hash()) {
			start = append(start, d) // consented when it started; Start leaves it as it is
			wasRunning[d.Name] = true
			continue
		}
		if host.TimedOut(d.Name, d.Hash()) {
			continue // said when it did; neither asked about nor started again in this session
		}
		ok, note, err := s.mcpConsent(g, d)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notices = append(notices, note)
		}
		if ok {
			start = append(start, d)
		}
	}
	// A running server that is no longer among the session's servers (its mcp.json changed) ends. The policy files
	// are read once per session, so a server allowed when it started stays allowed while it runs.
	for _, n := range host.Names() {
		keep := false
		for _, d := range start {
			keep = keep || d.Name == n
		}
		if !keep {
			host.Stop(n)
			notices = append(notices, fmt.Sprintf("MCP server %q was stopped: it is no longer configured or allowed.", n))
			changed = append(changed, n+" stopped")
		}
	}
	// Each server is on disk in the audit log before it runs: the records are written while the stdio servers'
	// sandbox is prepared (mcpPrepare waits for them), an HTTP server's before it is connected.
	batch := &mcpBatch{audited: make(chan struct{})}
	var recs []audit.Record
	web := false
	for _, d := range start {
		if wasRunning[d.Name] {
			continue
		}
		web = web || d.Type != config.MCPStdio
		rule := "consent (" + commands.ConsentMCPServer + ")"
		if d.Source == config.MCPSourceUser {
			rule = "the user's mcp.json"
		}
		recs = append(recs, audit.Record{Session: sess.id, Event: audit.EventDecision, Op: policy.OpMCPStart, Input: mcpStarts(d),
			Verdict: policy.Allow.String(), Rule: rule})
	}
	go func() {
		for i, r := range recs {
			if batch.auditErr = s.record(r, i == len(recs)-1); batch.auditErr != nil {
				break
			}
		}
		close(batch.audited)
	}()
	if web {
		if <-batch.audited; batch.auditErr != nil {
			return nil, nil, batch.auditErr
		}
	}
	// The stdio servers that start now share the guard's scan before them (mcpPrepare).
	sess.mcp.mu.Lock()
	sess.mcp.batch = batch
	sess.mcp.mu.Unlock()
	// What did not start is said to the user and recorded, with why (the execution record holds changed).
	failed := host.Start(ctx, start)
	notices = append(notices, failed...)
	changed = append(changed, failed...)
	sess.mcp.mu.Lock()
	if sess.mcp.batch == batch {
		sess.mcp.batch = nil
	}
	sess.mcp.mu.Unlock()
	var running []string
	for _, d := range start {
		if host.Running(d.Name) {
			running = append(running, d.Name)
			if !wasRunning[d.Name] {
				changed = append(changed, mcpStarts(d))
			}
		}
	}
	<-batch.audited
	if batch.auditErr != nil {
		return nil, nil, batch.auditErr
	}
	content := "No MCP server is running."
	if len(running) > 0 {
		content = "MCP servers running: " + strings.Join(running, ", ") + "."
	}
	return &execv1.Result{Content: content, Notices: notices}, changed, nil
}

// mcpStarts says what starting d does, for the audit log: its name, where it is configured, the program it runs or
// the address it reaches.
func mcpStarts(d config.MCPServer) string {
	what := d.URL
	if d.Type == config.MCPStdio {
		what = d.CommandLine()
	}
	return fmt.Sprintf("%s (%s) %s", d.Name, d.Where(), what)
}

// mcpConsent decides whether a server may start: team policy (its mcp_servers lists and its rules), then, for a
// project's or the editor's server, the user's consent. It returns a notice for a server left out.
func (s *Service) mcpConsent(g *grant, d config.MCPServer) (bool, string, error) {
	sess := g.c.sess
	st := s.state(sess)
	if reason, forbidden := policy.MCPServerForbidden(st.Team, d.Name, d.Command, d.URL); forbidden {
		req := policy.Request{Kind: policy.KindConsent, Tool: commands.ConsentMCPServer, ConsentKind: commands.ConsentMCPServer,
			ConsentName: d.Name}
		err := s.auditDecision(g.c, commands.ConsentMCPServer, true, req, policy.Decision{Verdict: policy.Deny, Rule: "team policy",
			Reason: reason})
		return false, fmt.Sprintf("MCP server %q (%s) is not started: %s.", d.Name, d.Where(), reason), err
	}
	req := policy.Request{Kind: policy.KindConsent, Tool: commands.ConsentMCPServer, ConsentKind: commands.ConsentMCPServer,
		ConsentName: d.Name}
	if d.Source == config.MCPSourceUser {
		// The user's own file is the user's config, as in the terminal: only a rule that denies it counts.
		if dec := policy.Decide(req, st); dec.Verdict == policy.Deny {
			err := s.auditDecision(g.c, commands.ConsentMCPServer, true, req, dec)
			return false, fmt.Sprintf("MCP server %q (%s) is not started: %s.", d.Name, d.Where(), dec.Reason), err
		}
		return true, "", nil
	}
	hash := d.Hash()
	sess.mcp.mu.Lock()
	deniedHash, denied := sess.mcp.denied[d.Name]
	sess.mcp.mu.Unlock()
	if denied && deniedHash == hash {
		return false, "", nil // said once in this session
	}
	s.consentMu.Lock()
	defer s.consentMu.Unlock()
	path := filepath.Join(s.cfg.Home, "consents.json")
	cons, err := s.loadConsents(path)
	if err != nil {
		return false, "", err
	}
	if cons.Granted(commands.ConsentMCPServer, d.Name, sess.root, hash) {
		if dec := policy.Decide(req, st); dec.Verdict == policy.Deny {
			err := s.auditDecision(g.c, commands.ConsentMCPServer, true, req, dec)
			return false, fmt.Sprintf("MCP server %q (%s) is not started: %s.", d.Name, d.Where(), dec.Reason), err
		}
		return true, "", nil
	}
	cg, res, err := s.decideAs(g.c, g.op, commands.ConsentMCPServer, req)
	if err != nil {
		return false, "", err
	}
	if res == nil {
		res, err = cg.confirm(mcpQuestion(d))
		if err != nil {
			return false, "", err
		}
	}
	if res != nil {
		if res.GetStatus() == execv1.Status_STATUS_CANCELLED {
			return false, "", nil
		}
		sess.mcp.mu.Lock()
		if sess.mcp.denied == nil {
			sess.mcp.denied = map[string]string{}
		}
		sess.mcp.denied[d.Name] = hash
		sess.mcp.mu.Unlock()
		return false, fmt.Sprintf("MCP server %q (%s) is not started: %s", d.Name, d.Where(), strings.TrimPrefix(res.GetContent(),
			"Denied: ")), nil
	}
	cons.Grant(commands.ConsentMCPServer, d.Name, sess.root, hash)
	if err := s.record(audit.Record{Session: sess.id, Event: audit.EventConsent, Op: commands.ConsentMCPServer, Input: d.Name,
		Detail: map[string]string{"hash": hash, "root": sess.root, "where": d.Where()}}, true); err != nil {
		return false, "", err
	}
	if err := homefile.WriteAtomic(path, cons.Marshal(), 0o600); err != nil {
		return false, "", fmt.Errorf("save the consent: %w", err)
	}
	return true, "", nil
}

// mcpQuestion shows exactly what a server's consent covers: the server, where it is configured, what runs (command
// and args, the names of its variables) or what is contacted (the URL, the names of its headers). Values of
// variables and headers are never shown: they may be tokens.
func mcpQuestion(d config.MCPServer) *execv1.Question {
	from := map[string]string{config.MCPSourceProject: "the project", config.MCPSourceEditor: "the editor"}[d.Source]
	lines := []string{fmt.Sprintf("MCP server %q, configured by %s in %s.", d.Name, from, d.Where())}
	if d.Source == config.MCPSourceEditor {
		lines[0] = fmt.Sprintf("MCP server %q, configured by the editor.", d.Name) // not "by the editor in the editor"
	}
	switch d.Type {
	case config.MCPStdio:
		lines = append(lines, "Runs in the sandbox (no network; writes only in the project folder):", "  "+d.CommandLine())
		if names := d.EnvNames(); len(names) > 0 {
			lines = append(lines, "With the variables (values not shown): "+strings.Join(names, ", "))
		}
	default:
		lines = append(lines, fmt.Sprintf("Garuda connects to it (%s): %s", d.Type, d.URL))
		if names := d.HeaderNames(); len(names) > 0 {
			lines = append(lines, "Sending the headers (values not shown): "+strings.Join(names, ", "))
		}
	}
	lines = append(lines, "Its tools are offered to the model; each call asks first unless a rule allows it.")
	return &execv1.Question{Title: fmt.Sprintf("Start the MCP server %q?", d.Name), Preview: strings.Join(lines, "\n"), Consent: true}
}

// mcpHost is the session's host, made on first use; nil once the session closes.
func (s *Service) mcpHost(sess *session) *mcphost.Host {
	sess.mcp.mu.Lock()
	defer sess.mcp.mu.Unlock()
	if sess.mcp.closed {
		return nil
	}
	if sess.mcp.host == nil {
		sess.mcp.host = mcphost.New(mcphost.Options{Root: sess.root, Launch: s.mcpLaunch(sess), Log: s.cfg.Log,
			SaveDir: sess.outputDir, CallTimeout: sandbox.MaxTimeout})
	}
	return sess.mcp.host
}

// mcpLaunch runs a stdio server's program like a bash command of the session: in the command sandbox (the network
// only through the broker's proxy, by rules: a server asks no question), the protected paths read-only, under the
// guard, which checks what it left after its calls and at its end.
func (s *Service) mcpLaunch(sess *session) mcphost.Launch {
	return func(ctx context.Context, srv config.MCPServer, stdin io.Reader, stdout io.Writer) error {
		cmd := srv.CommandLine()
		spec, watch, err := s.mcpPrepare(sess, cmd)
		if err != nil {
			return err
		}
		if watch != nil {
			sess.mcp.mu.Lock()
			watch.live++
			sess.mcp.mu.Unlock()
			defer s.mcpWatchDone(sess, watch) // after its end's check below
		}
		// The network as the network policy allows, through the broker's proxy: rules only, no questions.
		px, err := s.startProxy(ctx, sess, s.commandNetwork(nil, nil, sess, cmd))
		if err != nil {
			return err
		}
		defer px.stop()
		spec.Proxy = px.socket
		for _, k := range srv.EnvNames() {
			spec.Env = append(spec.Env, k+"="+srv.Env[k])
		}
		// The server's program and arguments as the file gives them, without a shell (nothing expanded or split);
		// cmd, the same quoted for a shell, names it in questions, notices and the audit log.
		spec.Argv = append([]string{srv.Command}, srv.Args...)
		spec.Stdin, spec.Stdout, spec.UntilCancelled = stdin, stdout, true
		// Its standard error is the server's log, saved like a command's output.
		spec.OutputFile = filepath.Join(sess.outputDir, fmt.Sprintf("mcp-%s-%s.log", srv.Name, time.Now().UTC().Format("20060102T150405")))
		key := srv.Name
		sess.mcp.mu.Lock()
		if sess.mcp.watches == nil {
			sess.mcp.watches = map[string]*mcpWatch{}
		}
		sess.mcp.watches[key] = watch
		if sess.mcp.writable == nil {
			sess.mcp.writable = map[string]bool{}
		}
		sess.mcp.writable[key] = !spec.ReadOnlyRoot
		if watch != nil {
			watch.names = append(watch.names, key)
		}
		sess.mcp.mu.Unlock()
		stop := make(chan struct{})
		var periodic sync.WaitGroup
		if watch != nil {
			// Checked while it runs too (at once when the root's entries change): defends against a server that plants,
			// say, a repository with core.fsmonitor between its calls, which the user's git would run before its next call.
			periodic.Go(func() {
				everyGuardInterval(stop, watch.w.Changed, func(now time.Time) { watch.check(s, sess.id, cmd, now, false) })
			})
		}
		res, err := sandbox.Run(ctx, spec)
		close(stop)
		periodic.Wait()
		ended := time.Now()
		sess.mcp.mu.Lock()
		if sess.mcp.watches[key] == watch {
			delete(sess.mcp.watches, key)
			delete(sess.mcp.writable, key)
		}
		sess.mcp.mu.Unlock()
		if watch != nil {
			// Its end is checked, unless a check began after it (a server of its batch that ended with it).
			watch.check(s, sess.id, cmd, ended, false)
		}
		var notRun *sandbox.ProgramError
		switch {
		case errors.As(err, &notRun):
			return fmt.Errorf("%w: %w", mcphost.ErrNotStarted, err)
		case err != nil:
			return err
		case res.Cancelled:
			return nil
		case res.ExitCode != 0:
			return fmt.Errorf("exit code %d; its log is %s", res.ExitCode, spec.OutputFile)
		}
		return nil
	}
}

// mcpWatchDone says one server of the watch is done (its end checked, or it did not start): after the last, the
// watch ends (its pending file goes). A server of the batch that starts after that runs without one.
func (s *Service) mcpWatchDone(sess *session, watch *mcpWatch) {
	if watch == nil {
		return
	}
	sess.mcp.mu.Lock()
	watch.live--
	last := watch.live == 0
	sess.mcp.mu.Unlock()
	if last {
		watch.w.End()
	}
}

// mcpPrepare builds a stdio server's sandbox spec and takes the guard's scan before it (prepareRun): once for the
// servers of an mcp_start, which start together, and for each server that starts alone (a restart).
func (s *Service) mcpPrepare(sess *session, cmd string) (sandbox.Spec, *mcpWatch, error) {
	sess.mcp.mu.Lock()
	b := sess.mcp.batch
	sess.mcp.mu.Unlock()
	prepare := func() (sandbox.Spec, *mcpWatch, error) {
		spec, w, err := s.prepareRun(sess, s.state(sess), &execv1.Bash{Command: cmd})
		if err != nil || w == nil {
			return spec, nil, err
		}
		return spec, &mcpWatch{w: w}, nil
	}
	if b == nil {
		// A server that starts alone (a restart after it stopped) is on disk in the audit log before it runs.
		if err := s.record(audit.Record{Session: sess.id, Event: audit.EventDecision, Op: policy.OpMCPStart, Input: cmd,
			Verdict: policy.Allow.String(), Rule: "restart"}, true); err != nil {
			return sandbox.Spec{}, nil, err
		}
		return prepare()
	}
	b.once.Do(func() { b.spec, b.watch, b.err = prepare() })
	if <-b.audited; b.auditErr != nil {
		return sandbox.Spec{}, nil, b.auditErr
	}
	spec := b.spec
	spec.Command, spec.Env = cmd, slices.Clone(spec.Env)
	return spec, b.watch, b.err
}

// closeMCP ends the session's servers and waits until their programs are gone.
func (s *session) closeMCP() {
	s.mcp.mu.Lock()
	s.mcp.closed = true
	h := s.mcp.host
	s.mcp.mu.Unlock()
	if h != nil {
		h.Close()
	}
}

// mcpModeChanged stops the stdio servers of a session whose mode changed: they start again, under the new mode
// (plan mode: the project read-only), at the next mcp_start.
func (s *session) mcpModeChanged() []string {
	s.mcp.mu.Lock()
	h := s.mcp.host
	s.mcp.mu.Unlock()
	if h == nil {
		return nil
	}
	why := "the mode changed, and they start again under the new one with the next prompt"
	if s.currentMode() == execv1.Mode_MODE_PLAN {
		why = "plan mode; they start again with the project read-only with the next prompt"
	}
	return h.StopStdio(why)
}

// mcpWritable reports whether server is a stdio server running with the project writable.
func (s *session) mcpWritable(server string) bool {
	s.mcp.mu.Lock()
	defer s.mcp.mu.Unlock()
	return s.mcp.writable[server]
}

// McpTools lists the tools of the session's running servers.
func (s *Service) McpTools(ctx context.Context, req *execv1.McpToolsRequest) (*execv1.McpToolsResponse, error) {
	sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	return mcpList(sess), nil
}

// mcpList is what the session's running MCP servers offer: their tools and prompts, and what happened to them since
// the last list (for McpTools and mcp_start's result). Only a server that started is listed: after its consent.
func mcpList(sess *session) *execv1.McpToolsResponse {
	sess.mcp.mu.Lock()
	h := sess.mcp.host
	sess.mcp.mu.Unlock()
	if h == nil {
		return &execv1.McpToolsResponse{}
	}
	tools, notices, gen := h.Tools()
	out := &execv1.McpToolsResponse{Notices: notices, Generation: gen}
	for _, p := range h.Prompts() {
		hint := ""
		for _, a := range p.Args {
			hint = strings.TrimSpace(hint + " <" + a + ">")
		}
		out.Prompts = append(out.Prompts, &execv1.CommandInfo{Name: p.Server + ":" + p.Name, Description: p.Description,
			ArgumentHint: hint, Source: "mcp"})
	}
	for _, t := range tools {
		out.Tools = append(out.Tools, &execv1.McpTool{Name: t.Name, Server: t.Server, Tool: t.Tool, Description: t.Description,
			InputSchemaJson: string(t.Schema), ReadOnlyHint: t.ReadOnlyHint})
	}
	return out
}

func checkMCPCall(s *Service, c *call) (*request, error) {
	op := c.start.GetMcpCall()
	server, tool, args := op.GetServer(), op.GetTool(), strings.TrimSpace(op.GetArgumentsJson())
	if server == "" || tool == "" {
		return nil, fmt.Errorf("mcp_call needs a server and a tool: %w", ErrBadRequest)
	}
	if args == "" {
		args = "{}"
	}
	if len(args) > maxMCPArgs {
		return nil, fmt.Errorf("the arguments of %s/%s are over %d KiB", server, tool, maxMCPArgs>>10)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("the arguments of %s/%s are not a JSON object", server, tool)
	}
	name := "mcp__" + server + "__" + tool
	return &request{
		policy: policy.Request{Kind: policy.KindMCPTool, Tool: name, Server: server, MCPTool: tool},
		input:  server + "/" + tool + " " + cut(args, 4096),
		run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			// Only a tool the model is offered is called (none left out for its schema or a limit, by its raw name
			// either), and nobody is asked about one that is not.
			if err := s.mcpOffered(c.sess, server, tool); err != nil {
				return failed(err), nil
			}
			if s.callState(c).Mode == policy.ModePlan && c.sess.mcpWritable(server) {
				return s.refuseWritableInPlan(c, policy.OpMCPCall, g.req, fmt.Sprintf("the MCP server %q", server))
			}
			var pretty bytes.Buffer
			if json.Indent(&pretty, []byte(args), "", "  ") != nil {
				pretty.Reset()
				pretty.WriteString(args)
			}
			q := &execv1.Question{Title: server + "/" + tool, Preview: fmt.Sprintf("MCP tool %s of the server %q, with the arguments:\n%s",
				tool, server, cut(pretty.String(), 64<<10))}
			if res, err := g.confirm(q); res != nil || err != nil {
				return res, err
			}
			return s.mcpCall(ctx, c, server, tool, json.RawMessage(args))
		},
	}, nil
}

// mcpOffered checks that server runs in the session and offers tool to the model.
func (s *Service) mcpOffered(sess *session, server, tool string) error {
	sess.mcp.mu.Lock()
	h := sess.mcp.host
	sess.mcp.mu.Unlock()
	if h == nil {
		return fmt.Errorf("MCP server %q: %w", server, mcphost.ErrNotRunning)
	}
	return h.Offered(server, tool)
}

// mcpCall calls the tool and gives the model its result as head and tail, the whole saved like command output.
func (s *Service) mcpCall(ctx context.Context, c *call, server, tool string, args json.RawMessage) (*execv1.Result, error) {
	sess := c.sess
	sess.mcp.mu.Lock()
	h := sess.mcp.host
	sess.mcp.mu.Unlock()
	if h == nil {
		return failed(fmt.Errorf("MCP server %q: %w", server, mcphost.ErrNotRunning)), nil
	}
	res, err := h.Call(ctx, server, tool, args)
	undone := s.mcpGuard(sess, server, time.Now())
	switch {
	case err != nil && ctx.Err() != nil:
		return cancelled(), nil
	case err != nil:
		return failed(err), nil
	}
	out := &execv1.Result{Content: res.Text}
	if res.IsError {
		out.Status = execv1.Status_STATUS_FAILED
	}
	if len(out.Content) > sandbox.KeepOutput {
		path := filepath.Join(sess.outputDir, fmt.Sprintf("%s-mcp-%s.txt", time.Now().UTC().Format("20060102T150405"), newID()[:6]))
		where := ""
		if os.MkdirAll(sess.outputDir, 0o700) == nil && os.WriteFile(path, []byte(out.Content), 0o600) == nil {
			where = "; the whole result is in " + path
		}
		half := sandbox.KeepOutput / 2
		head, tail := strings.ToValidUTF8(out.Content[:half], ""), strings.ToValidUTF8(out.Content[len(out.Content)-half:], "")
		out.Content = fmt.Sprintf("%s\n[... %d bytes cut%s ...]\n%s", head, len(out.Content)-2*half, where, tail)
	}
	if out.Content == "" {
		out.Content = "(no output)"
	}
	for _, l := range undone {
		out.Content += "\n" + l
	}
	return out, nil
}

// mcpGuard checks, after a call and before its result returns, what a stdio server left for programs that run
// later outside the sandbox (the guard undoes it, as after a command): defends against a call that plants, say, a
// repository with core.fsmonitor, which the user's git would run as soon as the turn ends. A check that began after
// the call ended (another call's, or one of a server that started with it) covers it; between calls the periodic
// check (mcpLaunch) and its end's cover the server.
func (s *Service) mcpGuard(sess *session, server string, ended time.Time) []string {
	m := &sess.mcp
	m.mu.Lock()
	w := m.watches[server]
	if w == nil || m.closed {
		m.mu.Unlock()
		return nil
	}
	label := "MCP servers " + strings.Join(w.names, ", ")
	m.mu.Unlock()
	return w.check(s, sess.id, label, ended, true)
}

// maxResource is the most of a resource attached to a prompt.
const maxResource = 256 << 10

func checkMCPResource(s *Service, c *call) (*request, error) {
	op := c.start.GetMcpResource()
	server, uri := op.GetServer(), op.GetUri()
	if server == "" || uri == "" {
		return nil, fmt.Errorf("mcp_resource needs a server and a URI: %w", ErrBadRequest)
	}
	// The user named it (@server:uri), and the server runs with their consent, which covers what it serves; a rule
	// that denies the server's tools (mcp__server) denies its resources too.
	return &request{input: server + ":" + uri, run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
		sess := c.sess
		req := policy.Request{Kind: policy.KindMCPTool, Tool: "mcp__" + server + "__read_resource", Server: server, MCPTool: "read_resource"}
		if d := policy.Decide(req, s.state(sess)); d.Verdict == policy.Deny {
			if err := s.auditDecision(c, policy.OpMCPResource, false, req, d); err != nil {
				return nil, err
			}
			return denied(d.Reason), nil
		}
		sess.mcp.mu.Lock()
		h := sess.mcp.host
		sess.mcp.mu.Unlock()
		if h == nil {
			return failed(fmt.Errorf("MCP server %q: %w", server, mcphost.ErrNotRunning)), nil
		}
		text, err := h.ReadResource(ctx, server, uri)
		switch {
		case err != nil && ctx.Err() != nil:
			return cancelled(), nil
		case err != nil:
			return failed(err), nil
		}
		return &execv1.Result{Content: cut(text, maxResource)}, nil
	}}, nil
}

// mcpPrompt resolves "/<server>:<prompt> args" to the prompt of a running server, which its consent covers; ok is
// false when text names none.
func (s *Service) mcpPrompt(ctx context.Context, sess *session, text string) (*execv1.Result, bool) {
	word, rest, _ := strings.Cut(strings.TrimPrefix(text, "/"), " ")
	server, name, found := strings.Cut(word, ":")
	if !found || server == "" || name == "" || !strings.HasPrefix(text, "/") {
		return nil, false
	}
	sess.mcp.mu.Lock()
	h := sess.mcp.host
	sess.mcp.mu.Unlock()
	if h == nil {
		return nil, false
	}
	prompt, ok, err := h.GetPrompt(ctx, server, name, rest)
	switch {
	case !ok:
		return nil, false
	case err != nil:
		return failed(err), true
	}
	return &execv1.Result{Content: prompt, Resolved: &execv1.Resolved{Kind: execv1.Resolved_KIND_PROMPT, Prompt: prompt}}, true
}

// cut is s at most n bytes, valid UTF-8.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
