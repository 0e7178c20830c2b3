package policy

import (
	"fmt"
	"net/netip"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// Rule is one permission rule, in the grammar of Claude Code's settings:
//
//	bash                       every command
//	bash(npm run test *)       "npm run test" and any further words (also the older bash(npm run test:*))
//	bash(git status)           exactly "git status" for allow; deny and ask rules match any command that
//	                           starts with their words
//	read_file(./secrets/**)    a path pattern, gitignore-style: "//abs/path", "~/in/home", "/root-relative",
//	                           "./root-relative", "dir/sub" (root-relative), "*.env" (no slash: any depth);
//	                           "*" and "?" match within a name, "**" any number of names; a pattern that
//	                           names a folder covers everything under it
//	edit_file(src/**)          edit_file and write_file rules each cover both tools: both change a file
//	glob(...), grep(...)       searches; read_file rules cover searches too
//	web_fetch(domain:x.com)    one host for web_fetch; "domain:*.x.com" covers the domain and its subdomains
//	network(domain:x.com)      one host for web_fetch and for sandboxed commands (the broker's proxy); the host
//	                           may be an IP literal (10.0.0.5, ::1 or [::1]); only a pattern without "*" opens
//	                           the host's loopback, private and link-local addresses (see Decision.OpensPrivate)
//	web_search                 the provider's server-side web search (a consent per session; deny leaves it out)
//	mcp__server__tool          one MCP tool; mcp__server or mcp__server__* every tool of the server (and,
//	                           for deny, the consent to start the server)
//
// Claude's names Bash, Read, Edit, Write, WebFetch, Glob and Grep are aliases. Command patterns are matched
// against the words of the parsed command (mvdan.cc/sh), never as a string prefix: see command.go.
type Rule struct {
	Text   string // the rule as written
	Source string // the file it came from, or "session"

	tool  string // canonical tool: bash, read_file, write_file, edit_file, glob, grep, web_fetch, network, mcp
	kinds []Kind // request kinds the rule covers
	all   bool   // no pattern: everything of the tool

	path *pathPattern

	words   []string // command words; "*" is one word
	stars   []bool   // words[i] holds a "*"
	restAny bool     // trailing "*" or ":*": any further words

	host string // web_fetch, network: host or *.domain

	mcpServer, mcpTool string // mcpTool "" or "*": every tool
}

var toolAliases = map[string]string{
	OpBash: OpBash, "Bash": OpBash,
	OpReadFile: OpReadFile, "Read": OpReadFile,
	OpWriteFile: OpWriteFile, "Write": OpWriteFile,
	OpEditFile: OpEditFile, "Edit": OpEditFile, "MultiEdit": OpEditFile,
	OpGlob: OpGlob, "Glob": OpGlob,
	OpGrep: OpGrep, "Grep": OpGrep,
	OpWebFetch: OpWebFetch, "WebFetch": OpWebFetch,
	OpNetwork:   OpNetwork,
	OpWebSearch: OpWebSearch, "WebSearch": OpWebSearch,
}

var toolKinds = map[string][]Kind{
	OpBash:      {KindCommand},
	OpReadFile:  {KindRead, KindSearch},
	OpWriteFile: {KindWrite, KindEdit},
	OpEditFile:  {KindWrite, KindEdit},
	OpGlob:      {KindSearch},
	OpGrep:      {KindSearch},
	OpWebFetch:  {KindNetwork},
	OpNetwork:   {KindNetwork},
	OpWebSearch: {KindConsent},
	"mcp":       {KindMCPTool, KindConsent},
}

// ParseRule parses one rule (see Rule). Its Source is empty; ParseSettings sets it to the file's name.
func ParseRule(text string) (Rule, error) {
	r := Rule{Text: text}
	if strings.ContainsAny(text, "\x00\n\r") {
		return r, fmt.Errorf("rule %q: control characters are not allowed", text)
	}
	name, arg, hasArg := strings.Cut(text, "(")
	name = strings.TrimSpace(name)
	if hasArg {
		if !strings.HasSuffix(arg, ")") {
			return r, fmt.Errorf("rule %q: missing closing parenthesis", text)
		}
		arg = strings.TrimSpace(strings.TrimSuffix(arg, ")"))
		if arg == "" {
			return r, fmt.Errorf("rule %q: empty pattern (write %s without parentheses for every call)", text, name)
		}
	}
	if strings.HasPrefix(name, "mcp__") {
		if hasArg {
			return r, fmt.Errorf("rule %q: MCP rules take no pattern", text)
		}
		rest := strings.TrimPrefix(name, "mcp__")
		srv, tool, _ := strings.Cut(rest, "__")
		if srv == "" {
			return r, fmt.Errorf("rule %q: missing the server name", text)
		}
		r.tool, r.kinds, r.mcpServer, r.mcpTool = "mcp", toolKinds["mcp"], srv, tool
		return r, nil
	}
	canon, ok := toolAliases[name]
	if !ok {
		return r, fmt.Errorf("rule %q: unknown tool %q (want bash, read_file, write_file, edit_file, glob, grep, web_fetch, "+
			"network, web_search or mcp__server__tool)", text, name)
	}
	r.tool, r.kinds = canon, toolKinds[canon]
	if !hasArg {
		r.all = true
		return r, nil
	}
	switch canon {
	case OpBash:
		return r, r.parseCommand(arg)
	case OpWebSearch:
		return r, fmt.Errorf("rule %q: web_search takes no pattern", text)
	case OpWebFetch, OpNetwork:
		d, ok := strings.CutPrefix(arg, "domain:")
		h, valid := normHostPattern(d)
		if !ok || !valid {
			return r, fmt.Errorf("rule %q: want %s(domain:host), host a name, *.domain or an IP address", text, canon)
		}
		r.host = h
		return r, nil
	default:
		p, err := parsePathPattern(arg)
		if err != nil {
			return r, fmt.Errorf("rule %q: %w", text, err)
		}
		r.path = p
		return r, nil
	}
}

func (r *Rule) parseCommand(arg string) error {
	if s, ok := strings.CutSuffix(arg, ":*"); ok {
		arg, r.restAny = s, true
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(arg), "")
	if err != nil {
		return fmt.Errorf("rule %q: command pattern does not parse: %w", r.Text, err)
	}
	bad := fmt.Errorf("rule %q: a command pattern is one simple command of plain words", r.Text)
	if len(f.Stmts) != 1 || len(f.Stmts[0].Redirs) > 0 || f.Stmts[0].Background || f.Stmts[0].Negated {
		return bad
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return bad
	}
	for _, w := range call.Args {
		s, ok := patternWord(w)
		if !ok {
			return bad
		}
		r.words = append(r.words, s)
	}
	if !r.restAny && len(r.words) > 1 && r.words[len(r.words)-1] == "*" {
		r.words, r.restAny = r.words[:len(r.words)-1], true
	}
	r.stars = make([]bool, len(r.words))
	for i, w := range r.words {
		r.stars[i] = strings.Contains(w, "*")
	}
	if r.words[0] == "*" {
		// "bash(*)", "bash(* *)", "bash(*:*)": every command, as plain "bash"
		r.all, r.words, r.restAny = len(r.words) == 1, nil, false
		if !r.all {
			return fmt.Errorf("rule %q: a command pattern starts with the program's name", r.Text)
		}
	}
	return nil
}

// patternWord returns the text of a pattern word; "*" stays a wildcard.
func patternWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeLit(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// String returns the rule as written.
func (r Rule) String() string { return r.Text }

// describe says in words what a rule lets happen, for Loosening.
func (r Rule) describe() string {
	switch {
	case r.tool == OpBash && r.all:
		return "runs any command without asking, also outside the sandbox"
	case r.tool == OpBash:
		return "runs these commands without asking, also outside the sandbox"
	case r.tool == "mcp":
		return "uses this MCP tool without asking"
	case r.tool == OpWebFetch:
		return "fetches from the network without asking"
	case r.tool == OpNetwork:
		return "reaches the network without asking, from web_fetch and from commands"
	case r.tool == OpWebSearch:
		return "lets the model search the web without asking"
	case r.tool == OpReadFile || r.tool == OpGlob || r.tool == OpGrep:
		return "reads without asking"
	default:
		return "changes files without asking"
	}
}

func (r *Rule) covers(k Kind) bool {
	for _, x := range r.kinds {
		if x == k {
			return true
		}
	}
	return false
}

// normHostPattern lower-cases a host or "*.domain", drops its trailing dots and checks its characters; an IP
// literal (IPv6 with or without brackets) becomes its canonical spelling, an IPv4-mapped IPv6 address its IPv4
// one. It is idempotent, so that a rule and a request naming the same host normalise alike (a rule for
// "evil.io.." once became "evil.io." and missed "evil.io").
func normHostPattern(h string) (string, bool) {
	h = strings.TrimRight(strings.ToLower(strings.TrimSpace(h)), ".")
	name := strings.TrimPrefix(h, "*.")
	if name == "" || len(h) > 253 {
		return "", false
	}
	if strings.ContainsAny(name, ":[]") {
		// Only an IP literal has these; a wildcard over an address means nothing.
		inner, bracketed := strings.CutPrefix(name, "[")
		if bracketed {
			var closed bool
			if inner, closed = strings.CutSuffix(inner, "]"); !closed {
				return "", false
			}
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || a.Zone() != "" || name != h || !bracketed && a.Is4() {
			return "", false
		}
		return a.Unmap().String(), true
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return "", false
		}
	}
	if strings.Contains(name, "..") {
		return "", false
	}
	if a, err := netip.ParseAddr(name); err == nil {
		if name != h {
			return "", false // "*.10.0.0.1"
		}
		return a.String(), true
	}
	// A name whose last label is a number is another spelling of an IPv4 address to inet_aton ("2130706433",
	// "0177.0.0.1", "0x7f.1", "127.1"): refused, as no top-level domain is numeric (defends against a rule or a
	// check missing 127.0.0.1 under a spelling that a resolver still turns into it).
	last := name[strings.LastIndexByte(name, '.')+1:]
	if strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "" {
		return "", false
	}
	return h, true
}

// hostMatch matches a normalised host against "host" or "*.domain" (the domain itself and its subdomains).
func hostMatch(pattern, host string) bool {
	if d, ok := strings.CutPrefix(pattern, "*."); ok {
		return host == d || strings.HasSuffix(host, "."+d)
	}
	return host == pattern
}

type pathBase int

const (
	baseRoot pathBase = iota
	baseAbs
	baseHome
	baseAny
)

type pathPattern struct {
	base  pathBase
	segs  []string // lower-case copies in lsegs, for deny and ask matching
	lsegs []string
}

func parsePathPattern(p string) (*pathPattern, error) {
	pp := &pathPattern{}
	switch {
	case strings.HasPrefix(p, "//"):
		pp.base, p = baseAbs, p[2:]
	case strings.HasPrefix(p, "~/"):
		pp.base, p = baseHome, p[2:]
	case p == "~":
		pp.base, p = baseHome, ""
	case strings.HasPrefix(p, "/"):
		pp.base, p = baseRoot, p[1:]
	case strings.HasPrefix(p, "./"):
		pp.base, p = baseRoot, p[2:]
	default:
		if strings.Contains(strings.TrimSuffix(p, "/"), "/") {
			pp.base = baseRoot
		} else {
			pp.base = baseAny
		}
	}
	p = strings.Trim(p, "/")
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." {
			continue
		}
		if s == ".." {
			return nil, fmt.Errorf("path pattern must not contain \"..\"")
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("path pattern %q: %w", s, err)
		}
		pp.segs = append(pp.segs, s)
	}
	if pp.base == baseAny && len(pp.segs) == 0 {
		return nil, fmt.Errorf("empty path pattern")
	}
	pp.lsegs = make([]string, len(pp.segs))
	for i, s := range pp.segs {
		pp.lsegs[i] = strings.ToLower(s)
	}
	return pp, nil
}

// match reports whether abs (absolute, clean) is matched by the pattern or lies under a folder it matches.
// fold matches case-insensitively: deny and ask rules fold, so that a case-insensitive file system cannot be
// used to step around them.
func (pp *pathPattern) match(abs string, st *State, fold bool) bool {
	var rel string
	var ok bool
	switch pp.base {
	case baseAbs:
		rel, ok = pathglob.Within("/", abs)
	case baseHome:
		if st.UserHome == "" {
			return false
		}
		rel, ok = pathglob.Within(st.UserHome, abs)
	case baseRoot:
		rel, ok = pathglob.Within(st.Root, abs)
	case baseAny:
		if rel, ok = pathglob.Within(st.Root, abs); !ok {
			rel, ok = pathglob.Within("/", abs)
		}
	}
	if !ok {
		return false
	}
	segs, pat := pathglob.Split(rel), pp.segs
	if fold {
		segs, pat = pathglob.Split(foldName(rel)), pp.lsegs
	}
	if pp.base == baseAny && len(pat) == 1 {
		for _, s := range segs {
			if m, _ := path.Match(pat[0], s); m {
				return true
			}
		}
		return false
	}
	// A pattern that matches a folder above the path covers it.
	return pathglob.Pattern(pat).Covers(segs)
}
