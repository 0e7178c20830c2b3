package policy

import (
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// word is one word of a parsed command: its text when static, or dyn when the shell computes it at run time
// (parameter, command or arithmetic expansion, globs, braces, a tilde).
type word struct {
	s   string
	dyn bool
}

// command is what Decide knows about a command's text.
//
// Allow rules see only top: the simple commands joined by ;, newline, &&, || and pipes, each of plain words.
// Anything else (a subshell, $(...), backticks, a redirection to a file, &, an assignment prefix, a function,
// a parse error) makes the command unallowable by rules: it falls back to the defaults. A compound command is
// allowed by rules only when every part is.
//
// Deny and ask rules see every simple command anywhere in the text (inside substitutions, subshells,
// functions and the scripts given to sh -c, bash -c and eval), and also the command behind a wrapper (env,
// timeout, nice, nohup, xargs, sudo, find -exec, ...) at every word position, since a wrapper's options cannot
// all be known. A dynamic word matches any pattern, and a text that cannot be analysed (opaque) matches every
// deny and ask rule: they fail closed.
type command struct {
	parses    int // scripts parsed so far, bounded by maxParses
	allowable bool
	top       [][]word
	all       []part
	opaque    bool
}

// part is one simple command found anywhere in the text, for deny and ask rules.
type part struct {
	ws      []word
	base    string // the program's base name ("/bin/rm" is "rm"), "" when computed
	wrapper bool   // the program runs its arguments as a command
}

// wrappers run their arguments as a command.
var wrappers = map[string]bool{
	"env": true, "timeout": true, "nice": true, "nohup": true, "xargs": true, "sudo": true, "doas": true,
	"command": true, "builtin": true, "exec": true, "time": true, "stdbuf": true, "ionice": true, "setsid": true,
	"chrt": true, "taskset": true, "strace": true, "ltrace": true, "unbuffer": true, "find": true, "flock": true,
	"watch": true, "chroot": true, "busybox": true, "nsenter": true, "unshare": true, "setpriv": true,
	"runuser": true, "fakeroot": true, "proot": true, "firejail": true, "catchsegv": true, "parallel": true,
}

// shells run a script given as an argument (sh -c '...').
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "fish": true,
	"su": true, "csh": true, "tcsh": true, "yash": true, "posh": true,
}

const (
	maxShellDepth = 4
	maxParses     = 64 // nested scripts parsed per command; beyond that the command is opaque (defends against slow inputs)
)

var parserPool = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func parseScript(text string) (*syntax.File, error) {
	p := parserPool.Get().(*syntax.Parser)
	defer parserPool.Put(p)
	return p.Parse(strings.NewReader(text), "")
}

func analyzeCommand(text string) *command {
	c := &command{allowable: true}
	f, err := parseScript(text)
	if err != nil || strings.ContainsRune(text, 0) {
		return &command{opaque: true}
	}
	if len(f.Stmts) == 0 {
		c.allowable = false
	}
	for _, st := range f.Stmts {
		c.collectTop(st)
	}
	c.collectAll(f, 0)
	return c
}

// collectTop gathers the simple commands a rule may allow; anything else makes the command unallowable
// (defends against a rule for "npm run test" carrying a redirection, a subshell, a background job or a
// substitution with it).
func (c *command) collectTop(st *syntax.Stmt) {
	if st.Background || st.Coprocess || st.Disown || st.Negated {
		c.allowable = false
		return
	}
	for _, r := range st.Redirs {
		if !harmlessRedirect(r) {
			c.allowable = false
			return
		}
	}
	switch x := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		c.collectTop(x.X)
		c.collectTop(x.Y)
	case *syntax.CallExpr:
		if len(x.Assigns) > 0 || len(x.Args) == 0 {
			c.allowable = false // VAR=... prefixes can change what runs (PATH, LD_PRELOAD, BASH_ENV)
			return
		}
		ws := make([]word, len(x.Args))
		for i, a := range x.Args {
			w, plain := wordOf(a)
			if !plain {
				c.allowable = false
				return
			}
			ws[i] = w
		}
		c.top = append(c.top, ws)
	default:
		c.allowable = false
	}
}

// harmlessRedirect accepts only redirections that neither read nor write a file: fd duplication and
// /dev/null.
func harmlessRedirect(r *syntax.Redirect) bool {
	if r.Word == nil || r.Hdoc != nil {
		return false
	}
	w, plain := wordOf(r.Word)
	if !plain || w.dyn {
		return false
	}
	switch r.Op {
	case syntax.DplOut, syntax.DplIn:
		return w.s == "-" || (len(w.s) == 1 && w.s[0] >= '0' && w.s[0] <= '9')
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrIn:
		return w.s == "/dev/null"
	}
	return false
}

// collectAll gathers every simple command in the file, and those of scripts handed to shells and eval.
func (c *command) collectAll(f *syntax.File, depth int) {
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		ws := make([]word, len(call.Args))
		for i, a := range call.Args {
			ws[i], _ = wordOf(a)
		}
		pt := part{ws: ws}
		if !ws[0].dyn {
			pt.base = path.Base(ws[0].s)
			pt.wrapper = wrappers[pt.base]
		}
		c.all = append(c.all, pt)
		c.expandScripts(ws, depth)
		return true
	})
}

// expandScripts parses the scripts that sh -c, bash -c and eval would run, directly or behind wrappers.
func (c *command) expandScripts(ws []word, depth int) {
	starts := []int{0}
	if !ws[0].dyn && wrappers[path.Base(ws[0].s)] {
		for i := 1; i < len(ws); i++ {
			starts = append(starts, i)
		}
	}
	parsed := map[int]bool{} // each argument is parsed once, however many wrappers lie before it
	for _, i := range starts {
		if ws[i].dyn {
			continue
		}
		prog := path.Base(ws[i].s)
		var scripts []string
		switch {
		case prog == "eval" || prog == "source" || prog == ".":
			var parts []string
			for _, w := range ws[i+1:] {
				if w.dyn {
					c.opaque = true
					return
				}
				parts = append(parts, w.s)
			}
			scripts = append(scripts, strings.Join(parts, " "))
		case shells[prog]:
			// After "--" (or a lone "-") every word is an operand, a script even if it starts with "-": defends
			// against bash -c -- '-;rm x' hiding rm from deny rules.
			operands := false
			for j, w := range ws[i+1:] {
				if w.dyn {
					c.opaque = true // sh -c "$X": the script is not known
					return
				}
				if !operands && (w.s == "--" || w.s == "-") {
					operands = true
					continue
				}
				if (operands || !strings.HasPrefix(w.s, "-")) && !parsed[i+1+j] {
					parsed[i+1+j] = true
					scripts = append(scripts, w.s)
				}
			}
		}
		for _, s := range scripts {
			c.parses++
			if depth >= maxShellDepth || c.parses > maxParses {
				c.opaque = true
				return
			}
			f, err := parseScript(s)
			if err != nil {
				c.opaque = true
				return
			}
			c.collectAll(f, depth+1)
		}
	}
}

// wordOf returns a word's static text, or dyn when the shell computes it. plain is false when computing it can
// run code (command, process or arithmetic substitution, complex parameter expansion), which no allow rule
// may cover.
func wordOf(w *syntax.Word) (word, bool) {
	var b strings.Builder
	dyn, plain := false, true
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if strings.ContainsAny(v, "*?[{") || (i == 0 && strings.HasPrefix(v, "~")) {
				dyn = true // globs, brace expansion and ~ are expanded by the shell
			}
			b.WriteString(unescapeLit(v))
		case *syntax.SglQuoted:
			if p.Dollar {
				dyn = true
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
					continue
				}
				dyn = true
				if !simpleParam(q) {
					plain = false
				}
			}
		default:
			dyn = true
			if !simpleParam(p) {
				plain = false
			}
		}
	}
	if dyn {
		return word{dyn: true}, plain
	}
	return word{s: b.String()}, plain
}

// simpleParam is $NAME or ${NAME}: no subscript (arithmetic in a subscript can run commands) and no operator.
func simpleParam(p syntax.WordPart) bool {
	pe, ok := p.(*syntax.ParamExp)
	return ok && pe.Param != nil && pe.Index == nil && pe.Exp == nil && pe.Repl == nil && pe.Slice == nil &&
		!pe.Excl && !pe.Length && pe.NestedParam == nil && len(pe.Modifiers) == 0
}

// unescapeLit removes the shell's backslash escapes from an unquoted literal ("\r\m" is "rm").
func unescapeLit(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// allowMatch: an allow rule covers a simple command when the words match exactly ("*" one static word), with
// any further words only after a trailing "*". The program is compared as written: a rule for "npm" does not
// cover "/tmp/npm" or "env npm".
func (r *Rule) allowMatch(ws []word) bool {
	if r.all {
		return true
	}
	if len(ws) < len(r.words) || (!r.restAny && len(ws) != len(r.words)) {
		return false
	}
	for i, p := range r.words {
		if ws[i].dyn || !(p == ws[i].s || r.stars[i] && wildMatch(p, ws[i].s)) {
			return false
		}
	}
	return true
}

// denyMatch: a deny or ask rule covers a simple command that starts with its words, at the program position
// or, behind a wrapper, at any position; the program is also compared by its base name ("/bin/rm" is "rm");
// a dynamic word matches anything from there on.
func (r *Rule) denyMatch(pt *part) bool {
	if r.all {
		return true
	}
	if r.denyAt(pt.ws, pt.base) {
		return true
	}
	if pt.wrapper {
		for i := 1; i < len(pt.ws); i++ {
			base := ""
			if !pt.ws[i].dyn {
				base = path.Base(pt.ws[i].s)
			}
			if r.denyAt(pt.ws[i:], base) {
				return true
			}
		}
	}
	return false
}

// denyAt matches the rule's words at the start of ws; base is ws[0]'s base name.
func (r *Rule) denyAt(ws []word, base string) bool {
	for i, p := range r.words {
		if i >= len(ws) {
			return false
		}
		w := ws[i]
		if w.dyn {
			return true // a computed word can become any words
		}
		if p == w.s || r.stars[i] && wildMatch(p, w.s) {
			continue
		}
		if i == 0 && (p == base || r.stars[i] && wildMatch(p, base)) {
			continue
		}
		return false
	}
	return true
}

// wildMatch matches s against p, where "*" in p matches any run of characters (also "/").
func wildMatch(p, s string) bool {
	if !strings.Contains(p, "*") {
		return p == s
	}
	parts := strings.Split(p, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// prefixRule returns the session rule for a command outside the sandbox: its program and subcommand with any
// further words ("git push *"), or false when the command is not one plain simple command whose program can
// be named (a wrapper or a shell would make the rule cover anything).
func prefixRule(c *command) (Rule, bool) {
	if !c.allowable || c.opaque || len(c.top) != 1 {
		return Rule{}, false
	}
	ws := c.top[0]
	if ws[0].dyn || ws[0].s == "" || strings.Contains(ws[0].s, "*") {
		return Rule{}, false
	}
	base := path.Base(ws[0].s)
	if wrappers[base] || shells[base] || base == "eval" || base == "source" || base == "." {
		return Rule{}, false
	}
	words := []string{ws[0].s}
	if len(ws) > 1 && !ws[1].dyn && isSubcommand(ws[1].s) {
		words = append(words, ws[1].s)
	}
	text := "bash(" + quoteWords(words) + " *)"
	r, err := ParseRule(text)
	if err != nil {
		return Rule{}, false
	}
	return r, true
}

func isSubcommand(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

func quoteWords(ws []string) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		q, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			q = "'" + w + "'"
		}
		out[i] = q
	}
	return strings.Join(out, " ")
}
