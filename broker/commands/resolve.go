package commands

import (
	"github.com/garuda-dev/garuda/broker/suggest"

	"fmt"
	"slices"
	"strings"
)

// Kind says what a prompt is.
type Kind int

const (
	// KindNotCommand: plain text for the model ("/etc/hosts is wrong" and "/usr is full" are ones); Message,
	// if set, names the close matches of a "/name" that is no command, to show once the answer has started.
	KindNotCommand Kind = iota
	// KindPrompt: a custom command or skill; Prompt is the text the model gets instead of the user's.
	KindPrompt
	// KindMessage: answered without the model (a built-in chat command, /help); Message is the answer to show.
	KindMessage
)

// Resolution is the outcome of Resolve.
type Resolution struct {
	Kind    Kind
	Prompt  string
	Message string
	Command *Command // the custom command or skill (a copy); nil for built-ins and unknown names
}

// builtins are the terminal's chat commands and the CLI command that does the same job, if there is one.
var builtins = map[string]string{
	"undo": "garuda undo", "rewind": "garuda undo",
	"setup": "garuda setup", "model": "garuda setup", "login": "garuda setup", "logout": "garuda setup",
	"doctor": "garuda doctor", "status": "garuda doctor",
	"permissions": "garuda trust", "trust": "garuda trust",
	"help": "", "diff": "", "compact": "", "clear": "", "cost": "", "init": "", "review": "", "mcp": "",
	"exit": "", "quit": "", "config": "", "memory": "", "resume": "", "sessions": "", "context": "",
	"export": "", "hooks": "", "agents": "", "todos": "", "bug": "", "add-dir": "", "plan": "", "build": "",
	"new": "", "vim": "", "theme": "",
}

// Resolve decides what a prompt is. Only text that starts with "/" and a name that is a custom command, a skill
// or a built-in (`/hello`, `/a:b args`, `/undo`) is a command; anything else ("/usr is almost full", "/etc/hosts
// is wrong", "/ x") is plain text for the model. A custom command or skill becomes its expanded body; a built-in
// gets a message and never reaches the model.
func (s *Set) Resolve(text string) Resolution {
	name, args, ok := commandName(text)
	if !ok {
		return Resolution{Kind: KindNotCommand}
	}
	if c, found := s.byName[name]; found {
		cp := *c
		return Resolution{Kind: KindPrompt, Prompt: expand(c, args), Command: &cp}
	}
	if name == "help" {
		return Resolution{Kind: KindMessage, Message: s.help()}
	}
	if name == "plan" || name == "build" {
		mode := strings.ToUpper(name[:1]) + name[1:]
		return Resolution{Kind: KindMessage,
			Message: fmt.Sprintf("/%s is not a command over ACP; choose the %s mode in the editor's mode selector.", name, mode)}
	}
	if cli, found := builtins[name]; found {
		if cli != "" {
			return Resolution{Kind: KindMessage,
				Message: fmt.Sprintf("/%s is not available over ACP in this version; run `%s` in a terminal.", name, cli)}
		}
		return Resolution{Kind: KindMessage,
			Message: fmt.Sprintf("/%s is not available over ACP in this version.", name)}
	}
	return Resolution{Kind: KindNotCommand, Message: s.unknown(name)}
}

// commandName splits "/name args". The name is ASCII letters, digits and _ . - : starting with a letter or
// digit; anything else (a path, a lone slash) is not a command.
func commandName(text string) (name, args string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	rest := text[1:]
	end := strings.IndexAny(rest, " \t\r\n")
	if end < 0 {
		end = len(rest)
	}
	name, args = rest[:end], strings.TrimSpace(rest[end:])
	if name == "" || !isAlnum(name[0]) {
		return "", "", false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' && c != ':' {
			return "", "", false
		}
	}
	return name, args, true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// help lists the custom commands and skills.
func (s *Set) help() string {
	var b strings.Builder
	line := func(c *Command) {
		fmt.Fprintf(&b, "/%s", c.Name)
		if c.ArgumentHint != "" {
			fmt.Fprintf(&b, " %s", c.ArgumentHint)
		}
		if c.Description != "" {
			fmt.Fprintf(&b, " — %s", c.Description)
		}
		fmt.Fprintf(&b, " (%s)\n", c.Path)
	}
	if len(s.commands) > 0 {
		b.WriteString("Custom commands:\n")
		for _, c := range s.commands {
			line(c)
		}
	}
	if len(s.skills) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Skills:\n")
		for _, c := range s.skills {
			line(c)
		}
	}
	if b.Len() == 0 {
		b.WriteString("No custom commands or skills. Add commands as .garuda/commands/NAME.md (or " +
			"$GARUDA_HOME/commands/NAME.md) and skills as .garuda/skills/NAME/SKILL.md.\n")
	}
	b.WriteString("\nThe built-in chat commands (/undo, /diff, /compact …) are not available over ACP in this version; " +
		"`garuda undo`, `garuda setup`, `garuda doctor` and `garuda trust` do their work in a terminal.")
	return b.String()
}

// unknown names the close matches of a name that is no command, or is empty when there are none.
func (s *Set) unknown(name string) string {
	m := s.closeMatches(name)
	if len(m) == 0 {
		return ""
	}
	return fmt.Sprintf("/%s is not a command, so it went to the model as text. Did you mean %s?", name, orList(m))
}

func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// closeMatches returns up to 5 names (custom and built-in) that start with name or are within edit distance
// 2 of it (case-insensitive), closest first.
func (s *Set) closeMatches(name string) []string {
	type match struct {
		name string
		dist int
	}
	var ms []match
	typed := strings.ToLower(name)
	consider := func(cand string) {
		lc := strings.ToLower(cand)
		switch {
		case lc == typed:
			ms = append(ms, match{cand, 0})
		case strings.HasPrefix(lc, typed):
			ms = append(ms, match{cand, 1})
		// Names longer than maxNameLen cannot match and are not measured, which defends against a long
		// prompt costing quadratic time.
		case len(typed) <= maxNameLen:
			if d := suggest.Distance(typed, lc); d <= 2 {
				ms = append(ms, match{cand, d})
			}
		}
	}
	for n := range s.byName {
		consider(n)
	}
	for n := range builtins {
		if _, custom := s.byName[n]; !custom {
			consider(n)
		}
	}
	// Distance 2 only when nothing is closer: "/fix" suggests /fix-issue, not also /vim.
	if slices.ContainsFunc(ms, func(m match) bool { return m.dist < 2 }) {
		ms = slices.DeleteFunc(ms, func(m match) bool { return m.dist == 2 })
	}
	slices.SortFunc(ms, func(a, b match) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for i := 0; i < len(ms) && i < 5; i++ {
		out = append(out, "/"+ms[i].name)
	}
	return out
}
