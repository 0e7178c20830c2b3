package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/policy"
)

// policyFiles are the settings a session is decided by, read when it opens.
type policyFiles struct {
	team    *policy.Settings
	teamErr error
	user    *policy.Settings
	project *policy.Settings
	trusted bool
	notices []string
	// claudeHooks are the hooks of the project's .claude/settings.json (the only key of it Garuda reads).
	claudeHooks policy.Hooks
}

// maxSettings caps a settings file; a larger one is malformed.
const maxSettings = conffile.MaxSize

// readHomeFile reads a file of the user's own configuration, following a symbolic link as it always has (users link
// their dotfiles); absent is (nil, nil).
func readHomeFile(path string) ([]byte, error) {
	data, err := conffile.ReadHome(path, maxSettings)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

func parseFile(path string) (*policy.Settings, error) {
	data, err := readHomeFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if data == nil {
		return nil, nil
	}
	return policy.ParseSettings(path, data)
}

// teamPolicy reads the managed file and $GARUDA_HOME/policy.json. Any error fails closed: the caller denies all
// that team policy could govern.
func (s *Service) teamPolicy() (*policy.Settings, error) {
	managed, err := parseFile(s.cfg.ManagedPolicy)
	if err != nil {
		return nil, err
	}
	home, err := parseFile(filepath.Join(s.cfg.Home, "policy.json"))
	if err != nil {
		return nil, err
	}
	if managed == nil && home == nil {
		return nil, nil
	}
	return policy.MergeTeam(managed, home), nil
}

// projectSettingsPath is the project's settings file, relative to the root.
const projectSettingsPath = ".garuda/settings.json"

// loadPolicy reads the project's settings files for a session on root, beside pf, the team's and the user's
// (homePolicy). The project's file is read through the confined file operations (a hostile repository cannot point
// it elsewhere).
func (s *Service) loadPolicy(root *fsops.Root, pf policyFiles) policyFiles {
	// A project's settings file that a read rule of the team or the user hides is not read: as if absent. Defends
	// against its content reaching the session through a notice (a malformed rule is quoted), a deny's reason or
	// a question; only the rules that can be known without it decide whether it may be read.
	data, err := []byte(nil), error(fs.ErrNotExist)
	if s.allowRead(s.homeState(root.Path(), root.Real(), pf))(filepath.Join(root.Path(), projectSettingsPath)) {
		data, err = conffile.ReadIn(root.FDPath(), projectSettingsPath, maxSettings)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		pf.notices = append(pf.notices, fmt.Sprintf("Garuda: %s is ignored: %v", projectSettingsPath, err))
	default:
		name := filepath.Join(root.Path(), projectSettingsPath)
		if pf.project, err = policy.ParseSettings(name, data); err != nil {
			pf.notices = append(pf.notices, fmt.Sprintf("Garuda: %v; the project's settings are ignored.", err))
			pf.project = nil
		} else {
			pf.trusted = s.trusted(root.Path(), policy.TrustHash(data))
			if pf.project.Limits != (policy.Limits{}) {
				pf.notices = append(pf.notices, fmt.Sprintf("Garuda: \"limits\" in %s are ignored: set them in %s or in team policy.",
					name, filepath.Join(s.cfg.Home, "settings.json")))
			}
		}
	}
	// A project's hooks in a file the read rules hide are not read: their consent question would show its content.
	st := &policy.State{Root: root.Path(), RealRoot: root.Real(), Home: s.cfg.Home, UserHome: s.userHome, Mode: policy.ModeBuild,
		Team: pf.team, TeamErr: pf.teamErr, User: pf.user, Project: pf.project, ProjectTrusted: pf.trusted}
	allow := s.allowRead(st)
	if pf.project != nil && !allow(filepath.Join(root.Path(), projectSettingsPath)) {
		pf.project.Hooks = nil
	}
	if allow(filepath.Join(root.Path(), claudeSettingsPath)) {
		pf.claudeHooks, pf.notices = s.loadClaudeHooks(root, pf.notices)
	}
	return pf
}

// homeState is the policy state of a project folder before its own settings are read: team policy and the user's
// settings decide alone.
func (s *Service) homeState(root, real string, pf policyFiles) *policy.State {
	return &policy.State{Root: root, RealRoot: real, Home: s.cfg.Home, UserHome: s.userHome, Mode: policy.ModeBuild,
		Team: pf.team, TeamErr: pf.teamErr, User: pf.user}
}

// rootHidden refuses a project folder that the read rules of the team or the user deny, decided on its path before
// it is looked at (real empty) and again under its real name once it is open: defends against a session's start, or
// its error, telling whether a hidden folder exists or what it holds.
func (s *Service) rootHidden(root, real string, pf policyFiles) error {
	req := policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: root}
	if pf.teamErr != nil || policy.Decide(req, s.homeState(root, real, pf)).Verdict != policy.Deny {
		return nil // a broken team policy denies everything the session does, and says so once it is open
	}
	return fmt.Errorf("root %s: the read rules (team policy or your settings) hide this folder: %w", root, ErrBadRequest)
}

// claudeSettingsPath is Claude Code's project settings file, relative to the root: only its hooks are read.
const claudeSettingsPath = ".claude/settings.json"

// loadClaudeHooks reads the hooks of the project's .claude/settings.json, through the confined file operations.
func (s *Service) loadClaudeHooks(root *fsops.Root, notices []string) (policy.Hooks, []string) {
	data, err := conffile.ReadIn(root.FDPath(), claudeSettingsPath, maxSettings)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, notices
	case err != nil:
		return nil, append(notices, fmt.Sprintf("Garuda: the hooks of %s are ignored: %v", claudeSettingsPath, err))
	}
	h, err := policy.ParseClaudeHooks(filepath.Join(root.Path(), claudeSettingsPath), data)
	if err != nil {
		return nil, append(notices, fmt.Sprintf("Garuda: %v; the hooks of %s are ignored.", err, claudeSettingsPath))
	}
	return h, notices
}

// homePolicy reads the settings files that are not the project's: team policy and the user's settings.
func (s *Service) homePolicy() policyFiles {
	var pf policyFiles
	pf.team, pf.teamErr = s.teamPolicy()
	if pf.teamErr != nil {
		pf.notices = append(pf.notices, fmt.Sprintf("Garuda: team policy could not be read, so every action is refused: %v", pf.teamErr))
	}
	var err error
	if pf.user, err = parseFile(filepath.Join(s.cfg.Home, "settings.json")); err != nil {
		// A broken user file is ignored with a notice: it can only have loosened or tightened the user's own choices,
		// and team policy still applies. Its deny rules are lost, so say so plainly.
		pf.notices = append(pf.notices, fmt.Sprintf("Garuda: your settings are ignored until fixed: %v", err))
	}
	return pf
}

// trusted reports whether the project settings' hash is pinned in trust.json.
func (s *Service) trusted(dir, hash string) bool {
	data, err := readHomeFile(filepath.Join(s.cfg.Home, "trust.json"))
	if err != nil || data == nil {
		return false
	}
	t, err := policy.ParseTrust(data)
	return err == nil && t.Pinned(dir, hash)
}

// auditLog opens the audit log at first use, in the folder team policy names or $GARUDA_HOME/audit.
func (s *Service) auditLog() (*audit.Log, error) {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	if s.audit != nil {
		return s.audit, nil
	}
	dir := filepath.Join(s.cfg.Home, "audit")
	team, err := s.teamPolicy()
	if err != nil {
		return nil, fmt.Errorf("team policy: %w", err)
	}
	if team != nil && team.AuditDir != "" {
		dir = team.AuditDir
	}
	log, err := audit.Open(dir, audit.Options{Broker: s.id})
	if err != nil {
		return nil, err
	}
	s.audit = log
	return log, nil
}
