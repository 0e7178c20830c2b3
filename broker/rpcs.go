package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/broker/config"
	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/broker/peercred"
	"github.com/garuda-dev/garuda/broker/permit"
	"github.com/garuda-dev/garuda/broker/sessionlog"
	"github.com/garuda-dev/garuda/broker/undo"
	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Prepare reads models.json and the credentials afresh, so that a `garuda setup` takes effect without a restart.
func (s *Service) Prepare(ctx context.Context, req *execv1.PrepareRequest) (*execv1.PrepareResponse, error) {
	cfg, err := config.Load(s.cfg.Home)
	if err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrConfig, err))
	}
	set := map[string]bool{}
	for _, k := range req.GetEnvKeys() {
		set[k] = true
	}
	envSet := func(name string) bool { return set[name] }
	r, err := cfg.Resolve(req.GetModel(), envSet)
	if errors.Is(err, config.ErrAuthRequired) {
		return &execv1.PrepareResponse{Outcome: &execv1.PrepareResponse_AuthRequired{AuthRequired: err.Error()}}, nil
	}
	if err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrConfig, err))
	}
	res := &execv1.PrepareResponse{Outcome: &execv1.PrepareResponse_Ready{Ready: &execv1.ModelSettings{
		Name: r.Name, Provider: r.Provider, Type: r.Type, BaseUrl: r.BaseURL, ModelId: r.ModelID,
		ContextWindow: int32(r.ContextWindow), MaxOutputTokens: int32(r.MaxOutputTokens),
		ApiKeyEnv: r.APIKeyEnv, ApiKey: r.APIKey,
		MaxSteps: int32(cfg.Limits.MaxSteps), MaxTurnTokens: int64(cfg.Limits.MaxTurnTokens), Reasoning: r.Reasoning,
	}}}
	for _, m := range cfg.Available(envSet) {
		res.Models = append(res.Models, &execv1.ModelChoice{Name: m.Name, Provider: m.Provider, Reasoning: m.Reasoning})
	}
	return res, nil
}

// SetupOptions lists what `garuda setup` offers.
func (s *Service) SetupOptions(ctx context.Context, _ *execv1.SetupOptionsRequest) (*execv1.SetupOptionsResponse, error) {
	res := &execv1.SetupOptionsResponse{Home: s.cfg.Home}
	cfg, err := config.Load(s.cfg.Home)
	if err == nil {
		res.CurrentDefault = cfg.Default
	}
	models := map[string][]string{}
	for _, m := range config.Catalog() {
		models[m.Provider] = append(models[m.Provider], m.Name)
	}
	for _, p := range config.Providers() {
		ms := models[p.Name]
		// The provider's recommended model first.
		sort.SliceStable(ms, func(i, j int) bool { return ms[i] == p.DefaultModel && ms[j] != p.DefaultModel })
		res.Providers = append(res.Providers, &execv1.SetupProvider{Name: p.Name, KeyEnv: p.APIKeyEnv, Models: ms})
	}
	// Providers of models.json too, so that `garuda setup --provider NAME` can store their key.
	if cfg != nil {
		var names []string
		for name := range cfg.Providers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			known := false
			for _, p := range res.Providers {
				known = known || p.Name == name
			}
			if known {
				continue
			}
			var ms []string
			for _, m := range cfg.Models {
				if m.Provider == name {
					ms = append(ms, m.Name)
				}
			}
			sort.Strings(ms)
			res.Providers = append(res.Providers, &execv1.SetupProvider{Name: name, KeyEnv: cfg.Providers[name].APIKeyEnv, Models: ms})
		}
	}
	return res, nil
}

// Setup stores the key (0600) and the default model.
func (s *Service) Setup(ctx context.Context, req *execv1.SetupRequest) (*execv1.SetupResponse, error) {
	// Audited first: a setup that cannot be audited is not done.
	if err := s.record(audit.Record{Event: audit.EventSetup, Input: req.GetProvider() + " " + req.GetModel()}, true); err != nil {
		return nil, toStatus(err)
	}
	if err := config.WriteSetup(s.cfg.Home, req.GetProvider(), req.GetModel(), req.GetApiKey(), req.GetForce()); err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrConfig, err))
	}
	return &execv1.SetupResponse{CredentialsPath: filepath.Join(s.cfg.Home, config.CredentialsFile),
		ModelsPath: filepath.Join(s.cfg.Home, config.ModelsFile)}, nil
}

// InspectTrust shows a project's settings that loosen safety.
func (s *Service) InspectTrust(ctx context.Context, req *execv1.InspectTrustRequest) (*execv1.InspectTrustResponse, error) {
	// The settings file is decided as a read by team policy and the user's settings before the folder is looked at,
	// and again under the folder's real name once it is open: a file a rule hides is not read, as a session does
	// not read it. Defends against this RPC telling a front end what a hidden file holds, or whether it exists.
	pf := s.homePolicy()
	hidden := func(root, real string) error {
		path := filepath.Join(root, projectSettingsPath)
		if s.allowRead(s.homeState(root, real, pf))(path) {
			return nil
		}
		return fmt.Errorf("%s is hidden from Garuda's tools (by team policy, your settings or as Garuda's own file): it is not read, "+
			"so there is nothing to trust: %w", path, ErrBadRequest)
	}
	if d := req.GetDir(); d != "" && filepath.IsAbs(d) {
		if err := hidden(filepath.Clean(d), ""); err != nil {
			return nil, toStatus(err)
		}
	}
	dir, err := checkRoot(req.GetDir())
	if err != nil {
		return nil, toStatus(err)
	}
	root, err := fsops.OpenRoot(dir)
	if err != nil {
		return nil, toStatus(fmt.Errorf("%s: %w", dir, ErrRootNotFolder))
	}
	defer root.Close()
	p, _ := peercred.FromContext(ctx)
	if err := checkReach(p, root); err != nil {
		return nil, toStatus(err)
	}
	if err := hidden(dir, root.Real()); err != nil {
		return nil, toStatus(err)
	}
	res := &execv1.InspectTrustResponse{SettingsPath: filepath.Join(dir, projectSettingsPath)}
	data, err := conffile.ReadIn(root.FDPath(), projectSettingsPath, maxSettings)
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrConfig, err))
	}
	set, err := policy.ParseSettings(res.SettingsPath, data)
	if err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrConfig, err))
	}
	res.Exists = true
	res.Hash = policy.TrustHash(data)
	res.Trusted = s.trusted(dir, res.Hash)
	res.Loosening = set.Loosening()
	return res, nil
}

// PinTrust pins the hash the user saw; a file changed since is refused.
func (s *Service) PinTrust(ctx context.Context, req *execv1.PinTrustRequest) (*execv1.PinTrustResponse, error) {
	cur, err := s.InspectTrust(ctx, &execv1.InspectTrustRequest{Dir: req.GetDir()})
	if err != nil {
		return nil, err
	}
	if !cur.Exists || cur.Hash != req.GetHash() {
		return nil, toStatus(fmt.Errorf("%s changed since it was shown; run garuda trust again: %w", cur.SettingsPath, ErrBadRequest))
	}
	path := filepath.Join(s.cfg.Home, "trust.json")
	t := &policy.Trust{}
	if data, err := readHomeFile(path); err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrConfig, err))
	} else if data != nil {
		if t, err = policy.ParseTrust(data); err != nil {
			return nil, toStatus(fmt.Errorf("%w: %s: %v", ErrConfig, path, err))
		}
	}
	t.Pin(filepath.Clean(req.GetDir()), req.GetHash())
	if err := s.record(audit.Record{Event: audit.EventConsent, Op: "trust", Input: req.GetDir(),
		Detail: map[string]string{"hash": req.GetHash()}}, true); err != nil {
		return nil, toStatus(err)
	}
	if err := homefile.WriteAtomic(path, t.Marshal(), 0o600); err != nil {
		return nil, toStatus(err)
	}
	return &execv1.PinTrustResponse{TrustPath: path}, nil
}

// Record appends to the session's file.
func (s *Service) Record(ctx context.Context, req *execv1.RecordRequest) (*execv1.RecordResponse, error) {
	sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := sess.log.Append(req.GetKind(), req.GetData()); err != nil {
		if errors.Is(err, sessionlog.ErrFull) {
			return nil, toStatus(fmt.Errorf("%w: %v", ErrTooMany, err))
		}
		return nil, toStatus(fmt.Errorf("%w: %v", ErrBadRequest, err))
	}
	return &execv1.RecordResponse{}, nil
}

// Undo restores the last change of a session, or lists its changes.
func (s *Service) Undo(ctx context.Context, req *execv1.UndoRequest) (*execv1.UndoResponse, error) {
	id := req.GetSessionId()
	if id == "" {
		var err error
		if id, err = s.newestWithChanges(req.GetFolder()); err != nil {
			return nil, toStatus(err)
		}
	}
	if err := sessionlog.ValidID(id); err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrBadRequest, err))
	}
	res := &execv1.UndoResponse{SessionId: id}
	if req.GetList() {
		es, err := s.undos.List(id)
		if err != nil {
			return nil, toStatus(err)
		}
		for _, e := range es {
			res.Entries = append(res.Entries, undoEntry(e))
		}
		return res, nil
	}
	// The path is decided (and the decision audited) before anything of it is opened: an undo that the policy
	// denies, or that cannot be audited, is not done.
	var p permit.Permit
	current := func(abs string) ([32]byte, bool, error) {
		var err error
		if p, err = s.undoPermit(id, abs); err != nil {
			return [32]byte{}, false, err
		}
		return currentFile(p)
	}
	// A restore is checked by the command guard like a file tool's write: defends against an undo putting back a
	// config that named a program when its folder was no repository, in a folder another session's writes made one.
	var watch *guard.Watch
	var held *session
	var restored string
	restore := func(abs string, content []byte, existed bool) error {
		if held = s.sessionHolding(ctx, id, abs); held != nil {
			st := s.state(held)
			blind := policy.Decide(policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: abs}, st).Verdict == policy.Deny
			watch, restored = s.guardWrite(held, abs, true, false, blind), abs
		}
		return restoreFile(p, content, existed)
	}
	e, err := s.undos.Undo(id, restore, current)
	if watch != nil {
		if _, gerr := s.guardAfter(held.id, policy.OpUndo, restored, watch); gerr != nil && err == nil {
			return nil, toStatus(gerr)
		}
	}
	if err != nil {
		if errors.Is(err, undo.ErrNothing) || errors.Is(err, undo.ErrChanged) || errors.Is(err, errUndoDenied) {
			return nil, toStatus(fmt.Errorf("%w: %v", ErrNothing, err))
		}
		return nil, toStatus(err)
	}
	if err := s.record(audit.Record{Session: id, Event: audit.EventExecution, Op: policy.OpUndo, Input: e.Path,
		Status: "completed"}, true); err != nil {
		return nil, toStatus(err)
	}
	res.Restored = undoEntry(*e)
	return res, nil
}

// newestWithChanges is the newest session with changes to undo, in folder or below it when folder is given.
func (s *Service) newestWithChanges(folder string) (string, error) {
	if folder != "" && (!filepath.IsAbs(folder) || filepath.Clean(folder) != folder) {
		return "", fmt.Errorf("%w: the folder %q is not absolute and clean", ErrBadRequest, folder)
	}
	ids, err := s.undos.Sessions()
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		if folder == "" {
			return id, nil
		}
		es, err := s.undos.List(id)
		if err != nil {
			continue
		}
		for _, e := range es {
			if _, in := pathglob.Within(folder, e.Path); in {
				return id, nil
			}
		}
	}
	if folder != "" {
		return "", fmt.Errorf("no session has changes to undo in %s (run garuda undo in the project folder, or name the "+
			"session with --session): %w", folder, ErrNothing)
	}
	return "", fmt.Errorf("no session has changes to undo: %w", ErrNothing)
}

func undoEntry(e undo.Entry) *execv1.UndoEntry {
	return &execv1.UndoEntry{Path: e.Path, Time: e.Time.Format("2006-01-02 15:04:05"), Created: !e.Existed}
}

// VerifyAudit checks the hash chain of the audit log's files; only files of the audit folder are read.
func (s *Service) VerifyAudit(ctx context.Context, req *execv1.VerifyAuditRequest) (*execv1.VerifyAuditResponse, error) {
	dir := filepath.Join(s.cfg.Home, "audit")
	if team, err := s.teamPolicy(); err == nil && team != nil && team.AuditDir != "" {
		dir = team.AuditDir
	}
	var files []string
	if f := req.GetFile(); f != "" {
		if !filepath.IsAbs(f) || filepath.Dir(filepath.Clean(f)) != filepath.Clean(dir) {
			return nil, toStatus(fmt.Errorf("%s is not a file of the audit folder %s: %w", f, dir, ErrBadRequest))
		}
		files = []string{filepath.Clean(f)}
	} else {
		m, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		files = m
		if len(files) == 0 {
			return nil, toStatus(fmt.Errorf("the audit folder %s has no log yet: %w", dir, ErrNothing))
		}
	}
	res := &execv1.VerifyAuditResponse{}
	for _, f := range files {
		n, err := audit.Verify(f)
		c := &execv1.AuditFileCheck{File: f, Records: int64(n), Ok: err == nil}
		if err != nil {
			c.Error = strings.TrimPrefix(err.Error(), "verify audit log: ")
		}
		res.Files = append(res.Files, c)
	}
	return res, nil
}

// sessionHolding is the caller's open session whose project holds abs, id's own first; nil when none is open.
func (s *Service) sessionHolding(ctx context.Context, id, abs string) *session {
	p, _ := peercred.FromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	holds := func(sess *session) bool {
		_, in := pathglob.Within(sess.root, abs)
		return sess.owner.UID == p.UID && in
	}
	if sess := s.sessions[id]; sess != nil && holds(sess) {
		return sess
	}
	for _, sess := range s.sessions {
		if holds(sess) {
			return sess
		}
	}
	return nil
}

// errUndoDenied is an undo of a path that the policy now denies writing.
var errUndoDenied = errors.New("the policy denies writing this path")

// undoPermit decides the undo of abs as an edit (it reads the file to compare it with what Garuda wrote: a read rule
// that hides the file refuses it, which defends against undo telling whether a hidden file changed), under the state of
// the session if it is still open (else the team and user settings with the file's folder as the root), and audits the
// decision. A question's answer is the user's own `garuda undo`; a deny refuses the undo before the file is looked at.
func (s *Service) undoPermit(id, abs string) (permit.Permit, error) {
	s.mu.Lock()
	sess := s.sessions[id]
	s.mu.Unlock()
	var st *policy.State
	if sess != nil {
		st = s.state(sess)
	} else {
		files := s.homePolicy()
		st = &policy.State{Root: filepath.Dir(abs), Home: s.cfg.Home, UserHome: s.userHome, Mode: policy.ModeBuild,
			Team: files.team, TeamErr: files.teamErr, User: files.user}
	}
	req := policy.Request{Kind: policy.KindEdit, Tool: policy.OpEditFile, Path: abs}
	d, p := permit.Decide(req, st)
	rec := audit.Record{Session: id, Event: audit.EventDecision, Op: policy.OpUndo, Input: abs, Verdict: policy.Allow.String(),
		Rule: "undo", Reason: "restore the file as it was before Garuda's last change"}
	if d.Verdict == policy.Deny {
		rec.Verdict, rec.Rule, rec.Reason = "deny", d.Rule, d.Reason
	}
	if err := s.record(rec, true); err != nil {
		return permit.Permit{}, err
	}
	if d.Verdict == policy.Deny {
		return permit.Permit{}, fmt.Errorf("%s: %w: %s", abs, errUndoDenied, d.Reason)
	}
	return permit.Granted(p), nil
}
