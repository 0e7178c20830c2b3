package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/garuda-dev/garuda/internal/strictjson"
)

// Settings is one parsed settings or policy file, or the merge of the two team policy files.
//
// Every file may hold:
//
//	"permissions": {"allow": [...], "ask": [...], "deny": [...]}   rules, see ParseRule
//	"limits": {"memory_mb": N, "processes": N}                    resource limits of each command (see CommandLimits)
//	"package_registries": false                                   turn off the built-in allowlist of package
//	                                                              registries (PackageRegistries); only tightens
//	"limits": {"background_processes": N}                         background processes of a session at once
//
// Team policy files (the managed /etc/garuda/policy.json and $GARUDA_HOME/policy.json, recognised by the base
// name "policy.json") may also hold:
//
//	"allow_unsandboxed": bool      may commands run outside the sandbox at all (default true)
//	"weaker_sandbox_ok": bool      may commands run where the machine's sandbox is weaker than Garuda requires
//	                               (default false: the broker refuses them)
//	"network_allowlist": [hosts]   the only hosts web_fetch and sandboxed commands may reach ("example.com",
//	                               "*.example.com"); absent means no team restriction
//	"allowed_modes": [modes]       the modes a session may use ("build", "plan"); absent means both
//	"audit_dir": "/abs/path"       the folder the broker writes the audit log to
//	"mcp_servers": {"allow": [...], "deny": [...]}
//	                               which MCP servers may start, by "name:<key>", "command:<program>" or
//	                               "url:<address>" ('*' matches anything in an address); with an allow list only
//	                               the servers it matches start (see MCPServerForbidden)
//
// Team policy and the user's settings may hold (a project's is ignored: it would loosen the guard):
//
//	"guard": {"max_entries": N, "skip": ["folder", ...]}   the command guard's walk (see GuardWalk)
//
// Every file may hold "hooks" (Claude Code's schema, see Hooks); a project's run only with the user's consent.
//
// Unknown keys, duplicate keys and malformed rules are errors naming the file and the line.
type Settings struct {
	Name string // the file the settings came from, used in reasons

	Allow, Ask, Deny []Rule

	AllowUnsandboxed  *bool
	WeakerSandboxOK   *bool
	PackageRegistries *bool    // false: the built-in allowlist of package registries is off
	NetworkAllowlist  []string // nil: no allowlist; non-nil and empty: no host
	AllowedModes      []Mode   // nil: every mode
	AuditDir          string

	Guard  *GuardSettings
	Limits Limits
	Hooks  Hooks // nil: none

	// MCPAllow holds each team file's allow list of MCP servers (a server must match one entry of every list);
	// MCPDeny the entries that forbid one.
	MCPAllow [][]MCPMatch
	MCPDeny  []MCPMatch
}

// Limits are the resource limits of each command; a zero field is not set (the sandbox's default applies).
type Limits struct {
	MemoryMB  int // memory of each command, and of all of a user's commands together, in MiB
	Processes int // processes and threads of each command at once
	// BackgroundProcesses bounds the background processes of a session at once (see BackgroundLimit).
	BackgroundProcesses int
}

// DefaultBackgroundProcesses is how many background processes a session may run at once unless limits say fewer.
const DefaultBackgroundProcesses = 8

// BackgroundLimit is how many background processes a session may run at once: the tightest of team policy and the
// user's settings, DefaultBackgroundProcesses when neither sets it.
func BackgroundLimit(st *State) int {
	if n := CommandLimits(st).BackgroundProcesses; n > 0 {
		return n
	}
	return DefaultBackgroundProcesses
}

// tighter returns, field by field, the smaller of the limits that are set.
func (l Limits) tighter(o Limits) Limits {
	pick := func(a, b int) int {
		if a == 0 || (b != 0 && b < a) {
			return b
		}
		return a
	}
	return Limits{MemoryMB: pick(l.MemoryMB, o.MemoryMB), Processes: pick(l.Processes, o.Processes),
		BackgroundProcesses: pick(l.BackgroundProcesses, o.BackgroundProcesses)}
}

// CommandLimits returns the limits commands run with: the tightest of team policy and the user's settings, field
// by field. A project's settings do not set them (all of a user's commands share one memory bound, which one
// repository must not lower for the others).
func CommandLimits(st *State) Limits {
	var l Limits
	if st == nil {
		return l
	}
	for _, s := range []*Settings{st.Team, st.User} {
		if s != nil {
			l = l.tighter(s.Limits)
		}
	}
	return l
}

// UnsandboxedAllowed reports whether team policy lets commands run outside the sandbox (true for nil).
func (s *Settings) UnsandboxedAllowed() bool {
	return s == nil || s.AllowUnsandboxed == nil || *s.AllowUnsandboxed
}

// WeakerSandboxAllowed reports whether team policy lets commands run in a weaker sandbox than required
// (false for nil: fail closed).
func (s *Settings) WeakerSandboxAllowed() bool {
	return s != nil && s.WeakerSandboxOK != nil && *s.WeakerSandboxOK
}

// ParseSettings parses a settings.json or policy.json. name is the file's path, used in errors and reasons;
// team keys are accepted only when its base name is "policy.json" (see ParsePolicy for other names).
func ParseSettings(name string, data []byte) (*Settings, error) {
	return parse(name, data, filepath.Base(name) == "policy.json")
}

// ParsePolicy parses a team policy file whatever its name (the broker's flag may name the managed file).
func ParsePolicy(name string, data []byte) (*Settings, error) {
	return parse(name, data, true)
}

func parse(name string, data []byte, team bool) (*Settings, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("settings %s: line 1: the file is empty (write {} for no settings)", name)
	}
	p := newSettingsParser(name, data, team)
	s := &Settings{Name: name}
	if err := p.parse(s); err != nil {
		return nil, err
	}
	return s, nil
}

// settingsParser reads a settings file with internal/strictjson: errors start "settings NAME: line N:", and a key
// given twice is an error (two parsers could otherwise read different values from the same file).
type settingsParser struct {
	*strictjson.Decoder
	name string
	team bool
}

func newSettingsParser(name string, data []byte, team bool) *settingsParser {
	return &settingsParser{Decoder: strictjson.New("settings "+name, data), name: name, team: team}
}

func (p *settingsParser) delim(want json.Delim, what string) error {
	off := p.Offset()
	tok, err := p.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return p.Errorf(off, "%s must be a JSON %s", what, map[json.Delim]string{'{': "object", '[': "array"}[want])
	}
	return nil
}

// keys calls fn for each key of the object that starts at the decoder's position; duplicate keys are errors.
func (p *settingsParser) keys(what string, fn func(key string, off int64) error) error {
	if err := p.delim('{', what); err != nil {
		return err
	}
	return p.Fields(what, fn)
}

func (p *settingsParser) parse(s *Settings) error {
	err := p.keys("the file", func(key string, off int64) error {
		teamKey := func() error {
			if !p.team {
				return p.Errorf(off, "key %q belongs in team policy (policy.json), not in a settings file", key)
			}
			return nil
		}
		switch key {
		case "permissions":
			return p.keys(`"permissions"`, func(k string, off int64) error {
				var dst *[]Rule
				switch k {
				case "allow":
					dst = &s.Allow
				case "ask":
					dst = &s.Ask
				case "deny":
					dst = &s.Deny
				default:
					return p.Errorf(off, "unknown key %q in \"permissions\" (want allow, ask or deny)", k)
				}
				return p.strings(`"permissions.`+k+`"`, func(v string, off int64) error {
					r, err := ParseRule(v)
					if err != nil {
						return p.Errorf(off, "permissions.%s: %v", k, err)
					}
					r.Source = p.name
					*dst = append(*dst, r)
					return nil
				})
			})
		case "limits":
			return p.keys(`"limits"`, func(k string, off int64) error {
				var dst *int
				var most int
				switch k {
				case "memory_mb":
					dst, most = &s.Limits.MemoryMB, 1<<30 // 1 PiB
				case "processes":
					dst, most = &s.Limits.Processes, 1<<22 // the kernel's most pids
				case "background_processes":
					dst, most = &s.Limits.BackgroundProcesses, 64
				default:
					return p.Errorf(off, "unknown key %q in \"limits\" (want memory_mb, processes or background_processes)", k)
				}
				var raw any // a json.Number for a number (UseNumber), never a string that holds one
				if err := p.Decode(&raw); err != nil {
					return err
				}
				n, ok := raw.(json.Number)
				v, err := strconv.Atoi(string(n))
				if !ok || err != nil || v <= 0 || v > most {
					return p.Errorf(off, "limits.%s must be a whole number from 1 to %d", k, most)
				}
				*dst = v
				return nil
			})
		case "package_registries":
			var b bool
			if err := p.Decode(&b); err != nil {
				return p.Errorf(off, "%q must be true or false", key)
			}
			s.PackageRegistries = &b
			return nil
		case "allow_unsandboxed", "weaker_sandbox_ok":
			if err := teamKey(); err != nil {
				return err
			}
			var b bool
			if err := p.Decode(&b); err != nil {
				return p.Errorf(off, "%q must be true or false", key)
			}
			if key == "allow_unsandboxed" {
				s.AllowUnsandboxed = &b
			} else {
				s.WeakerSandboxOK = &b
			}
			return nil
		case "network_allowlist":
			if err := teamKey(); err != nil {
				return err
			}
			s.NetworkAllowlist = []string{}
			return p.strings(`"network_allowlist"`, func(v string, off int64) error {
				h, ok := normHostPattern(v)
				if !ok {
					return p.Errorf(off, "network_allowlist: %q is not a host name or *.domain", v)
				}
				s.NetworkAllowlist = append(s.NetworkAllowlist, h)
				return nil
			})
		case "allowed_modes":
			if err := teamKey(); err != nil {
				return err
			}
			s.AllowedModes = []Mode{}
			return p.strings(`"allowed_modes"`, func(v string, off int64) error {
				if Mode(v) != ModeBuild && Mode(v) != ModePlan {
					return p.Errorf(off, "allowed_modes: unknown mode %q (want build or plan)", v)
				}
				s.AllowedModes = append(s.AllowedModes, Mode(v))
				return nil
			})
		case "guard":
			return p.guard(s, off)
		case "hooks":
			return p.hooks(s)
		case "mcp_servers":
			if err := teamKey(); err != nil {
				return err
			}
			return p.mcpServers(s)
		case "audit_dir":
			if err := teamKey(); err != nil {
				return err
			}
			var d string
			if err := p.Decode(&d); err != nil {
				return p.Errorf(off, "%q must be a string", key)
			}
			if !filepath.IsAbs(d) || strings.ContainsRune(d, 0) {
				return p.Errorf(off, "audit_dir %q must be an absolute path", d)
			}
			s.AuditDir = filepath.Clean(d)
			return nil
		default:
			return p.Errorf(off, "unknown key %q", key)
		}
	})
	if err != nil {
		return err
	}
	return p.End()
}

// strings calls fn for each string of the array at the decoder's position, with the string's offset.
func (p *settingsParser) strings(what string, fn func(v string, off int64) error) error {
	if err := p.delim('[', what); err != nil {
		return err
	}
	for p.More() {
		tok, err := p.Token()
		if err != nil {
			return err
		}
		off := p.Offset()
		v, ok := tok.(string)
		if !ok {
			return p.Errorf(off, "%s must hold only strings", what)
		}
		if err := fn(v, off); err != nil {
			return err
		}
	}
	_, err := p.Token()
	if err != nil {
		return err
	}
	return nil
}

// MergeTeam merges the managed team policy with $GARUDA_HOME/policy.json. The result is at least as strict as
// each: rules are joined, booleans hold only if no file says otherwise, allowlists and allowed modes are
// intersected, the tighter of each limit holds; the managed file's audit_dir wins. Either may be nil; both nil
// gives nil (no team policy).
func MergeTeam(managed, home *Settings) *Settings {
	if managed == nil && home == nil {
		return nil
	}
	files := []*Settings{managed, home}
	m := &Settings{Name: "team policy"}
	var names []string
	for _, f := range files {
		if f == nil {
			continue
		}
		names = append(names, f.Name)
		m.Allow = append(m.Allow, f.Allow...)
		m.Ask = append(m.Ask, f.Ask...)
		m.Deny = append(m.Deny, f.Deny...)
		m.AllowUnsandboxed = andBool(m.AllowUnsandboxed, f.AllowUnsandboxed)
		m.WeakerSandboxOK = andBool(m.WeakerSandboxOK, f.WeakerSandboxOK)
		m.PackageRegistries = andBool(m.PackageRegistries, f.PackageRegistries)
		m.NetworkAllowlist = intersect(m.NetworkAllowlist, f.NetworkAllowlist)
		m.AllowedModes = intersect(m.AllowedModes, f.AllowedModes)
		m.Limits = m.Limits.tighter(f.Limits)
		if m.AuditDir == "" {
			m.AuditDir = f.AuditDir
		}
		m.Guard = mergeGuard(m.Guard, f.Guard)
		m.Hooks = m.Hooks.Join(f.Hooks)
		m.MCPAllow = append(m.MCPAllow, f.MCPAllow...)
		m.MCPDeny = append(m.MCPDeny, f.MCPDeny...)
	}
	m.Name = strings.Join(names, " + ")
	return m
}

func andBool(a, b *bool) *bool {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	v := *a && *b
	return &v
}

// intersect treats nil as "no restriction".
func intersect[T comparable](a, b []T) []T {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := []T{}
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// Loosening lists, one human-readable line each, the entries of a project settings file that loosen safety
// and therefore apply only while the file is pinned in trust.json. Deny and ask rules only tighten and always
// apply, so they are not listed.
func (s *Settings) Loosening() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, r := range s.Allow {
		out = append(out, fmt.Sprintf("permissions.allow: %s (%s)", r.Text, r.describe()))
	}
	return out
}

// UntrustedNotice returns the notice for project settings whose loosening entries are ignored because the file
// is not pinned as trusted, or "" when there is nothing to say.
func UntrustedNotice(st *State) string {
	if st == nil || st.Project == nil || st.ProjectTrusted || len(st.Project.Loosening()) == 0 {
		return ""
	}
	return fmt.Sprintf("%s has %d setting(s) that loosen safety; they are ignored until you run `garuda trust` in %s.",
		st.Project.Name, len(st.Project.Loosening()), st.Root)
}
