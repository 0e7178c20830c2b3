package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hook events, Claude Code's names: the points of a turn at which hooks run.
const (
	HookPreToolUse       = "PreToolUse"
	HookPostToolUse      = "PostToolUse"
	HookUserPromptSubmit = "UserPromptSubmit"
	HookStop             = "Stop"
	HookSubagentStop     = "SubagentStop"
	HookSessionStart     = "SessionStart"
	HookSessionEnd       = "SessionEnd"
	HookPreCompact       = "PreCompact"
	HookNotification     = "Notification"
)

// HookEvents lists every event a settings file may name.
var HookEvents = []string{HookPreToolUse, HookPostToolUse, HookUserPromptSubmit, HookStop, HookSubagentStop,
	HookSessionStart, HookSessionEnd, HookPreCompact, HookNotification}

// DefaultHookTimeout is a hook's wall-clock limit when its definition gives none (Claude Code's default);
// MaxHookTimeout is the longest a definition may give (a command's longest).
const (
	DefaultHookTimeout = 60 * time.Second
	MaxHookTimeout     = 10 * time.Minute
)

// Hooks are the hooks of one settings file, Claude Code's schema:
//
//	"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "…", "timeout": 60}]}]}
//
// A matcher is a regular expression over the whole tool name (Garuda's, bash, or Claude's, Bash); "*" or empty
// matches every tool. Team policy's hooks may also say "fail_closed": true (a hook that errors or times out then
// blocks the action).
type Hooks map[string][]HookMatcher

// HookMatcher is one entry of an event's list: the hooks that run when the matcher matches.
type HookMatcher struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []HookCommand `json:"hooks"`
	re      *regexp.Regexp
}

// HookCommand is one hook: a shell command run in the command sandbox with the event's JSON on its stdin.
type HookCommand struct {
	Type       string        `json:"type"`
	Command    string        `json:"command"`
	Timeout    time.Duration `json:"timeout,omitempty"`
	FailClosed bool          `json:"fail_closed,omitempty"`
}

// Matches reports whether m applies to an event whose subject (a tool call's tool, a session start's source) goes
// by one of names; an event without a subject (nil names) matches every matcher.
func (m HookMatcher) Matches(names []string) bool {
	if m.re == nil || names == nil {
		return true
	}
	return slices.ContainsFunc(names, m.re.MatchString)
}

// For returns the hooks of event whose matcher matches one of names, in the file's order.
func (h Hooks) For(event string, names []string) []HookCommand {
	var out []HookCommand
	for _, m := range h[event] {
		if m.Matches(names) {
			out = append(out, m.Hooks...)
		}
	}
	return out
}

// Hash is the hash of the hook definitions, to which a consent to run them is pinned: a change to any command,
// matcher or timeout needs a new yes. Empty hooks hash to "".
func (h Hooks) Hash() string {
	if len(h) == 0 {
		return ""
	}
	b, err := json.Marshal(h) // map keys sorted: stable
	if err != nil {
		panic(fmt.Sprintf("marshal hooks: %v", err)) // strings and numbers only
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Join returns the hooks of a, then of b, event by event.
func (h Hooks) Join(o Hooks) Hooks {
	if len(o) == 0 {
		return h
	}
	out := Hooks{}
	for _, src := range []Hooks{h, o} {
		for ev, ms := range src {
			out[ev] = append(out[ev], ms...)
		}
	}
	return out
}

// claudeTools names Garuda's tools as Claude Code does, for a hook's input: the first is the name its JSON
// carries ("tool_name"), every alias of the rules' table (toolAliases) matches.
var claudeTools = map[string]string{
	OpBash: "Bash", OpReadFile: "Read", OpWriteFile: "Write", OpEditFile: "Edit", OpGlob: "Glob", OpGrep: "Grep",
	OpWebFetch: "WebFetch",
}

// HookToolNames returns the names a matcher is matched against for a call of op, Claude's name first (what a
// hook's input carries as tool_name), then Garuda's own and the other aliases the permission rules accept; nil
// when op is not a tool of the model.
func HookToolNames(op string) []string {
	if names, ok := hookToolNames[op]; ok {
		return names
	}
	if strings.HasPrefix(op, "mcp__") {
		return []string{op}
	}
	return nil
}

// hookToolNames is HookToolNames of each of Garuda's tools, from claudeTools and the rules' aliases.
var hookToolNames = func() map[string][]string {
	out := map[string][]string{}
	for op, claude := range claudeTools {
		names := []string{claude}
		for alias, canon := range toolAliases {
			if canon == op && alias != claude {
				names = append(names, alias)
			}
		}
		slices.Sort(names[1:])
		out[op] = names
	}
	return out
}()

// HookMayAllow reports whether a hook's "allow" may answer d, an ask, in the user's place: never a question that
// team policy asks, nor one about a protected path, nor one to run a command outside the sandbox. A hook can skip
// a question the user's or project's own settings ask, not loosen what the team or Garuda itself insists on.
func HookMayAllow(req Request, d Decision, st *State) bool {
	switch {
	case d.Verdict != Ask || st == nil:
		return false
	case d.Rule == "team policy":
		return false
	case (req.Kind == KindWrite || req.Kind == KindEdit) && protectedAbs(req.Path, st):
		return false
	case req.Kind == KindCommand && !req.Sandboxed:
		return false
	case Outside(req, st):
		return false
	}
	return true
}

// hooks parses the "hooks" object of a settings file.
func (p *settingsParser) hooks(s *Settings) error {
	h := Hooks{}
	err := p.keys(`"hooks"`, func(event string, off int64) error {
		if !slices.Contains(HookEvents, event) {
			return p.Errorf(off, "hooks: unknown event %q (want one of %s)", event, strings.Join(HookEvents, ", "))
		}
		if err := p.delim('[', `"hooks.`+event+`"`); err != nil {
			return err
		}
		for p.More() {
			m, err := p.hookMatcher(event)
			if err != nil {
				return err
			}
			h[event] = append(h[event], m)
		}
		_, err := p.Token()
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.Hooks = h
	return nil
}

func (p *settingsParser) hookMatcher(event string) (HookMatcher, error) {
	var m HookMatcher
	where := "hooks." + event
	hasHooks := false
	err := p.keys(`an entry of "`+where+`"`, func(k string, off int64) error {
		switch k {
		case "matcher":
			if err := p.Decode(&m.Matcher); err != nil {
				return p.Errorf(off, "%s: matcher must be a string", where)
			}
			if m.Matcher == "" || m.Matcher == "*" {
				return nil
			}
			re, err := regexp.Compile(`^(?:` + m.Matcher + `)$`)
			if err != nil {
				return p.Errorf(off, "%s: matcher %q is not a regular expression: %v", where, m.Matcher, err)
			}
			m.re = re
			return nil
		case "hooks":
			hasHooks = true
			if err := p.delim('[', `"`+where+`[].hooks"`); err != nil {
				return err
			}
			for p.More() {
				c, err := p.hookCommand(where)
				if err != nil {
					return err
				}
				m.Hooks = append(m.Hooks, c)
			}
			_, err := p.Token()
			if err != nil {
				return err
			}
			return nil
		default:
			return p.Errorf(off, "%s: unknown key %q (want matcher or hooks)", where, k)
		}
	})
	if err == nil && !hasHooks {
		err = p.Errorf(p.Offset(), "%s: an entry without \"hooks\"", where)
	}
	return m, err
}

func (p *settingsParser) hookCommand(where string) (HookCommand, error) {
	c := HookCommand{Timeout: DefaultHookTimeout}
	start := p.Offset()
	err := p.keys(`a hook of "`+where+`"`, func(k string, off int64) error {
		switch k {
		case "type":
			if err := p.Decode(&c.Type); err != nil || c.Type != "command" {
				return p.Errorf(off, `%s: hook type must be "command"`, where)
			}
		case "command":
			if err := p.Decode(&c.Command); err != nil || strings.TrimSpace(c.Command) == "" || strings.ContainsRune(c.Command, 0) {
				return p.Errorf(off, "%s: a hook's command must be a non-empty string", where)
			}
		case "timeout":
			var raw any
			if err := p.Decode(&raw); err != nil {
				return err
			}
			n, ok := raw.(json.Number)
			v, err := strconv.ParseFloat(string(n), 64)
			if !ok || err != nil || v <= 0 || v > MaxHookTimeout.Seconds() {
				return p.Errorf(off, "%s: a hook's timeout must be a number of seconds above 0 and at most %d", where, int(MaxHookTimeout.Seconds()))
			}
			c.Timeout = time.Duration(v * float64(time.Second))
		case "fail_closed":
			if !p.team {
				return p.Errorf(off, "%s: fail_closed belongs in team policy (policy.json): only a team hook may block on its own failure", where)
			}
			if err := p.Decode(&c.FailClosed); err != nil {
				return p.Errorf(off, "%s: fail_closed must be true or false", where)
			}
		default:
			return p.Errorf(off, "%s: unknown key %q in a hook (want type, command, timeout)", where, k)
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	if c.Type == "" || c.Command == "" {
		return c, p.Errorf(start, `%s: a hook needs "type": "command" and a "command"`, where)
	}
	return c, nil
}

// ParseClaudeHooks reads the hooks of a project's .claude/settings.json: only "hooks" is Garuda's to read; Claude's
// other keys are skipped, not errors. The hooks are parsed as strictly as Garuda's own. nil when there are none.
func ParseClaudeHooks(name string, data []byte) (Hooks, error) {
	p := newSettingsParser(name, data, false)
	s := &Settings{Name: name}
	err := p.keys("the file", func(key string, off int64) error {
		if key == "hooks" {
			return p.hooks(s)
		}
		return p.Skip() // Claude's key, not read; a key twice in it is still an error
	})
	if err != nil {
		return nil, err
	}
	if err := p.End(); err != nil {
		return nil, err
	}
	return s.Hooks, nil
}
