package policy

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// Mode is a session's agent mode.
type Mode string

const (
	ModeBuild Mode = "build" // edits ask first; commands run in the sandbox
	ModePlan  Mode = "plan"  // reads and plans: no edits; commands cannot write the project
)

// Verdict is what Decide answers.
type Verdict int

const (
	Deny Verdict = iota // the zero value denies: a forgotten Decision fails closed
	Ask
	Allow
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Choice is an answer a question offers.
type Choice string

const (
	ChoiceOnce    Choice = "once"    // allow this call
	ChoiceSession Choice = "session" // allow this call and add SessionRule's rule for the rest of the session
	ChoiceDeny    Choice = "deny"
)

// Kind is the kind of action a Request asks for.
type Kind string

const (
	KindRead    Kind = "read"
	KindWrite   Kind = "write"
	KindEdit    Kind = "edit"
	KindSearch  Kind = "search" // glob or grep under Path; the broker filters results with Decide(KindRead)
	KindCommand Kind = "command"
	KindNetwork Kind = "network"
	KindMCPTool Kind = "mcp_tool"
	KindConsent Kind = "consent"
)

// Request is one action to decide.
type Request struct {
	Kind      Kind
	Tool      string // model tool name: read_file, write_file, edit_file, glob, grep, bash, web_fetch, network (the proxy), mcp__server__tool
	Path      string // absolute, lexically cleaned path (reads, writes, edits, searches)
	Command   string // command text (KindCommand)
	Sandboxed bool   // the command runs in the OS sandbox
	Dir       string // the command's working folder (absolute)
	Host      string // network host (KindNetwork: web_fetch, or network for a command's connection through the proxy)

	Server, MCPTool string // KindMCPTool

	ConsentKind, ConsentName string // KindConsent: "mcp_server", "hook", "command", "skill", "network"
}

// State is everything a decision depends on besides the request. The broker builds it; nothing in it comes
// from the front end except through the broker's own checks.
type State struct {
	Root      string // the project folder (absolute)
	RealRoot  string // Root with its symlinks resolved (set by the broker): paths below either are decided under both
	Home      string // $GARUDA_HOME: credentials, trust and policy live here, so tools may not touch it
	UserHome  string // for "~/" rules
	OutputDir string // the session's output folder (full command outputs): reads allowed

	Mode Mode

	Team    *Settings // MergeTeam(managed, $GARUDA_HOME/policy.json); nil when there is none
	TeamErr error     // a team policy file that failed to load or parse: every request is denied with it

	User           *Settings // $GARUDA_HOME/settings.json
	Project        *Settings // .garuda/settings.json in the root
	ProjectTrusted bool      // the project file's current hash is pinned in trust.json

	SessionRules []Rule

	// Pointed are the root-relative paths the repositories below the root point git at (GitPointed of what the
	// broker last read): protected like the fixed names.
	Pointed []string
}

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	Reason  string   // one line a user reads
	Rule    string   // "default", "mode", "session rule", "team policy", or "<file>: <entry>"
	Choices []Choice // for Ask: the answers the question offers
	Warning string   // for Ask: e.g. outside the root, outside the sandbox
	// OpensPrivate is for KindNetwork: the host's loopback, private and link-local addresses may be dialled. Only
	// a rule that names this exact host (no "*") sets it on an allow, and a question, which is about this exact
	// host, sets it on an ask (for once its answer allows): defends against a wildcard rule or the registry
	// defaults reaching the machine's own services or the local network through a name that resolves there.
	OpensPrivate bool
}

// ManagedPolicyDir is where the managed team policy lives; tools may never write there.
const ManagedPolicyDir = "/etc/garuda"

var consentKinds = map[string]bool{"mcp_server": true, "hook": true, "command": true, "skill": true, "network": true,
	"agent": true, OpWebSearch: true}

// Decide decides one request. The order is the precedence, strictest first:
//
//  1. a broken state or request, a team policy that failed to load, a mode team policy does not allow, and
//     Garuda's own folders: deny;
//  2. team policy: its deny rules, allow_unsandboxed and network_allowlist deny;
//  3. the mode: plan mode denies writes, edits and commands outside the sandbox;
//  4. team ask rules: ask, and nothing below may lower that to allow;
//  5. deny rules of the user and the project (a project deny needs no trust: it only tightens): deny;
//  6. a write or edit of a protected path: ask (once or deny);
//  7. ask rules of the user and the project: ask (once or deny);
//  8. session rules, then allow rules of the team, the user and the trusted project: allow;
//  9. the defaults of the mode.
//
// When Root is reached through a symlink, a path below it under either name (Root or RealRoot) is decided under
// both, and the stricter decision wins: defends against a symlinked root, or the real name of one, carrying the
// file tools past $GARUDA_HOME and rules that name the other spelling.
func Decide(req Request, st *State) Decision {
	d := decideUnderBothRoots(req, st)
	if req.Kind == KindNetwork && d.Verdict == Ask {
		d.OpensPrivate = true // the question names this exact host
	}
	// An edit matches old_string against the file and says how often it was found: it reads the file, so a read
	// that the rules deny denies the edit (defends against recovering a read-denied file one guessed substring at a
	// time).
	if req.Kind == KindEdit && d.Verdict != Deny {
		if rd := decideUnderBothRoots(Request{Kind: KindRead, Tool: OpReadFile, Path: req.Path}, st); rd.Verdict == Deny {
			return deny(rd.Rule, "an edit reads the file, and "+rd.Reason)
		}
	}
	return d
}

// decideUnderBothRoots is Decide of one request, under Root and RealRoot.
func decideUnderBothRoots(req Request, st *State) Decision {
	if st != nil && st.RealRoot != "" && st.RealRoot != st.Root && req.Path != "" {
		// A path by the root's real name (as pwd, compilers and find print it in commands, which run there) is the
		// same path by the root's name: decided as that, under both names, below (it was decided as outside).
		if _, in := pathglob.Within(st.Root, req.Path); !in {
			if rel, in := pathglob.Within(st.RealRoot, req.Path); in {
				req.Path = filepath.Join(st.Root, rel)
			}
		}
	}
	d := decide(req, st)
	if st == nil || st.RealRoot == "" || st.RealRoot == st.Root || d.Verdict == Deny || req.Path == "" {
		return d
	}
	alt := *st
	alt.RealRoot = ""
	rel, in := pathglob.Within(st.Root, req.Path)
	if !in {
		return d
	}
	alt.Root, req.Path = st.RealRoot, filepath.Join(st.RealRoot, rel)
	if ad := decide(req, &alt); stricter(ad, d) {
		return ad
	}
	return d
}

// stricter reports whether a is stricter than b: a lower verdict, or a question with fewer choices.
func stricter(a, b Decision) bool {
	return a.Verdict < b.Verdict || a.Verdict == Ask && b.Verdict == Ask && len(a.Choices) < len(b.Choices)
}

func decide(req Request, st *State) Decision {
	if st == nil {
		return deny("default", "no policy state: refused")
	}
	if st.TeamErr != nil {
		return deny("team policy", fmt.Sprintf("team policy could not be read, so everything it governs is refused: %v", st.TeamErr))
	}
	if st.Mode != ModeBuild && st.Mode != ModePlan {
		return deny("mode", fmt.Sprintf("unknown mode %q: refused", st.Mode))
	}
	if st.Team != nil && st.Team.AllowedModes != nil && !containsMode(st.Team.AllowedModes, st.Mode) {
		return deny("team policy", fmt.Sprintf("team policy does not allow %s mode", st.Mode))
	}
	if !isAbsClean(st.Root) {
		return deny("default", "the project folder is not an absolute path: refused")
	}
	if d, bad := checkRequest(&req); bad {
		return d
	}
	var cmd *command
	if req.Kind == KindCommand {
		cmd = analyzeCommand(req.Command)
	}
	if d, ok := builtinDeny(&req, st); ok {
		return d
	}

	// 2. team policy: nothing below loosens it.
	team := st.Team
	if team != nil {
		if r := firstMatch(team.Deny, &req, st, cmd, false); r != nil {
			return deny("team policy", fmt.Sprintf("team policy denies this (%s: %s)", r.Source, r.Text))
		}
		if req.Kind == KindCommand && !req.Sandboxed && !team.UnsandboxedAllowed() {
			return deny("team policy", "team policy does not allow commands outside the sandbox")
		}
		if host, ok := networkHost(&req); ok && team.NetworkAllowlist != nil && !hostAllowed(team.NetworkAllowlist, host) {
			return deny("team policy", fmt.Sprintf("team policy allows network access only to its allowlist, and %s is not on it", host))
		}
	}

	// 3. the mode.
	if st.Mode == ModePlan {
		switch {
		case req.Kind == KindWrite || req.Kind == KindEdit:
			return deny("mode", "plan mode: no edits")
		case req.Kind == KindCommand && !req.Sandboxed:
			return deny("mode", "plan mode: commands run only in the sandbox")
		}
	}

	// 4. team ask rules set a floor.
	if team != nil {
		if r := firstMatch(team.Ask, &req, st, cmd, false); r != nil {
			return ask("team policy", fmt.Sprintf("team policy asks first (%s: %s)", r.Source, r.Text), warning(&req, st), false)
		}
	}

	// 5. deny rules of the user and the project (trusted or not: a deny only tightens).
	for _, s := range []*Settings{st.User, st.Project} {
		if s == nil {
			continue
		}
		if r := firstMatch(s.Deny, &req, st, cmd, false); r != nil {
			return deny(r.Source+": "+r.Text, fmt.Sprintf("denied by %s: %s", r.Source, r.Text))
		}
	}

	// 6. protected paths: always a question for the file tools, never a session rule.
	if (req.Kind == KindWrite || req.Kind == KindEdit) && protectedAbs(req.Path, st) {
		return ask("default", fmt.Sprintf("%s is a protected path: a change there can run code or change settings", displayPath(req.Path, st)),
			warning(&req, st), false)
	}

	// 7. ask rules of the user and the project.
	for _, s := range []*Settings{st.User, st.Project} {
		if s == nil {
			continue
		}
		if r := firstMatch(s.Ask, &req, st, cmd, false); r != nil {
			return ask(r.Source+": "+r.Text, fmt.Sprintf("%s: %s asks first", r.Source, r.Text), warning(&req, st), false)
		}
	}

	// 8. session rules and allow rules.
	if d, ok := allowedByRules(&req, st, cmd); ok {
		return d
	}

	// 9. defaults.
	return defaults(&req, st, cmd)
}

func deny(rule, reason string) Decision {
	return Decision{Verdict: Deny, Rule: rule, Reason: reason}
}

func ask(rule, reason, warn string, session bool) Decision {
	d := Decision{Verdict: Ask, Rule: rule, Reason: reason, Warning: warn, Choices: []Choice{ChoiceOnce, ChoiceDeny}}
	if session {
		d.Choices = []Choice{ChoiceOnce, ChoiceSession, ChoiceDeny}
	}
	return d
}

func isAbsClean(p string) bool {
	return p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// checkRequest refuses requests whose fields are missing or not in canonical form, so that no rule is matched
// against a path with ".." or a relative path (defends against path tricks slipping past path rules).
func checkRequest(req *Request) (Decision, bool) {
	switch req.Kind {
	case KindRead, KindWrite, KindEdit, KindSearch:
		if !isAbsClean(req.Path) {
			return deny("default", fmt.Sprintf("path %q is not absolute and clean: refused", req.Path)), true
		}
	case KindCommand:
		if strings.TrimSpace(req.Command) == "" {
			return deny("default", "empty command: refused"), true
		}
		if req.Dir != "" && !isAbsClean(req.Dir) {
			return deny("default", fmt.Sprintf("working folder %q is not absolute and clean: refused", req.Dir)), true
		}
	case KindNetwork:
		h, ok := normHostPattern(req.Host)
		if !ok || strings.HasPrefix(h, "*.") {
			return deny("default", fmt.Sprintf("network host %q is not a host name: refused", req.Host)), true
		}
		req.Host = h
	case KindMCPTool:
		if req.Server == "" || req.MCPTool == "" {
			srv, tool, ok := strings.Cut(strings.TrimPrefix(req.Tool, "mcp__"), "__")
			if !ok || !strings.HasPrefix(req.Tool, "mcp__") || srv == "" || tool == "" {
				return deny("default", fmt.Sprintf("MCP tool %q has no server and tool name: refused", req.Tool)), true
			}
			req.Server, req.MCPTool = srv, tool
		}
	case KindConsent:
		if !consentKinds[req.ConsentKind] || req.ConsentName == "" {
			return deny("default", fmt.Sprintf("unknown consent %q %q: refused", req.ConsentKind, req.ConsentName)), true
		}
		if req.ConsentKind == "network" {
			h, ok := normHostPattern(req.ConsentName)
			if !ok {
				return deny("default", fmt.Sprintf("network host %q is not a host name: refused", req.ConsentName)), true
			}
			req.ConsentName = h
		}
	default:
		return deny("default", fmt.Sprintf("unknown request kind %q: refused", req.Kind)), true
	}
	return Decision{}, false
}

// builtinDeny keeps tools out of Garuda's own files: $GARUDA_HOME holds the credentials, trust.json and the
// home policy.json, and /etc/garuda the managed policy (defends against the model reading keys, or pinning its
// own project settings as trusted, or loosening team policy).
func builtinDeny(req *Request, st *State) (Decision, bool) {
	switch req.Kind {
	case KindRead, KindSearch:
		if st.OutputDir != "" {
			if _, in := pathglob.Within(st.OutputDir, req.Path); in {
				return Decision{}, false
			}
		}
		if inFolded(st.Home, req.Path) {
			return deny("default", "Garuda's own folder ("+st.Home+") holds credentials and policy: tools may not read it"), true
		}
		if req.Kind == KindSearch && st.Home != "" && inFolded(req.Path, st.Home) {
			return deny("default", "this search would cover Garuda's own folder ("+st.Home+"): refused"), true
		}
		if dir := auditDir(st); dir != "" && (inFolded(dir, req.Path) || req.Kind == KindSearch && inFolded(req.Path, dir)) {
			return deny("default", "the audit folder team policy names ("+dir+") holds every session's record: tools may not read it"), true
		}
	case KindWrite, KindEdit:
		for _, dir := range []string{st.Home, ManagedPolicyDir} {
			if inFolded(dir, req.Path) {
				return deny("default", "Garuda's own folder ("+dir+") holds credentials and policy: tools may not change it"), true
			}
		}
		if dir := auditDir(st); dir != "" && inFolded(dir, req.Path) {
			return deny("default", "the audit folder team policy names ("+dir+") holds every session's record: tools may not change it"), true
		}
	}
	return Decision{}, false
}

// auditDir is the folder team policy moved the audit log to, or "": like $GARUDA_HOME, out of the tools' reach
// (defends against a front end that answers "allow" reading every session's commands, or rewriting the log).
func auditDir(st *State) string {
	if st.Team == nil {
		return ""
	}
	return st.Team.AuditDir
}

// inFolded reports whether p is dir or lies under it, ignoring case, so that a case-insensitive file system
// cannot be used to reach Garuda's own folders under another spelling.
func inFolded(dir, p string) bool {
	_, in := pathglob.Within(foldName(dir), foldName(p))
	return in
}

func containsMode(ms []Mode, m Mode) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

func networkHost(req *Request) (string, bool) {
	switch {
	case req.Kind == KindNetwork:
		return req.Host, true
	case req.Kind == KindConsent && req.ConsentKind == "network":
		return req.ConsentName, true
	}
	return "", false
}

func hostAllowed(list []string, host string) bool {
	for _, p := range list {
		if hostMatch(p, host) {
			return true
		}
	}
	return false
}

// firstMatch returns the first rule of rules that covers req. allow selects allow-rule matching (exact, and
// every part of a compound command); otherwise deny/ask matching (any part, wrappers, fail closed).
func firstMatch(rules []Rule, req *Request, st *State, cmd *command, allow bool) *Rule {
	for i := range rules {
		if rules[i].matches(req, st, cmd, allow) {
			return &rules[i]
		}
	}
	return nil
}

func (r *Rule) matches(req *Request, st *State, cmd *command, allow bool) bool {
	if !r.covers(req.Kind) {
		return false
	}
	switch r.tool {
	case OpBash:
		if allow {
			// allow rules are matched part by part in allowedByRules
			return false
		}
		if r.all || cmd.opaque {
			return true
		}
		for i := range cmd.all {
			if r.denyMatch(&cmd.all[i]) {
				return true
			}
		}
		return false
	case OpWebFetch:
		// a web_fetch rule is about web_fetch only; network rules cover the commands' proxy too
		return req.Tool != OpNetwork && (r.all || hostMatch(r.host, req.Host))
	case OpNetwork:
		return r.all || hostMatch(r.host, req.Host)
	case OpWebSearch:
		return req.ConsentKind == OpWebSearch
	case "mcp":
		srv, tool := req.Server, req.MCPTool
		if req.Kind == KindConsent {
			if req.ConsentKind != "mcp_server" || allow {
				return false // a server's consent is only ever denied by rule, never allowed
			}
			return r.mcpServer == req.ConsentName && (r.mcpTool == "" || r.mcpTool == "*")
		}
		return r.mcpServer == srv && (r.mcpTool == "" || r.mcpTool == "*" || r.mcpTool == tool)
	default:
		if allow && (r.tool == OpGlob || r.tool == OpGrep) && req.Tool != r.tool {
			return false // an allow for one search tool is not an allow for the other
		}
		if r.all {
			return true
		}
		return r.path.match(req.Path, st, !allow)
	}
}

// allowedByRules applies session rules and the allow rules of the team, the user and the trusted project.
func allowedByRules(req *Request, st *State, cmd *command) (Decision, bool) {
	type source struct {
		rules   []Rule
		session bool
	}
	sources := []source{{rules: st.SessionRules, session: true}}
	if st.Team != nil {
		sources = append(sources, source{rules: st.Team.Allow})
	}
	if st.User != nil {
		sources = append(sources, source{rules: st.User.Allow})
	}
	if st.Project != nil && st.ProjectTrusted {
		sources = append(sources, source{rules: st.Project.Allow})
	}
	found := func(r *Rule, session bool) (Decision, bool) {
		d := Decision{Verdict: Allow, Rule: r.Source + ": " + r.Text, Reason: fmt.Sprintf("allowed by %s: %s", r.Source, r.Text)}
		if session {
			d.Rule, d.Reason = "session rule", "allowed for this session ("+r.Text+")"
		}
		if req.Kind == KindNetwork {
			// Any allow rule that names this exact host opens its private addresses, whichever rule matched first.
			for _, s := range sources {
				for i := range s.rules {
					d.OpensPrivate = d.OpensPrivate || s.rules[i].namesHost() && s.rules[i].matches(req, st, cmd, true)
				}
			}
		}
		return d, true
	}
	if req.Kind != KindCommand {
		for _, s := range sources {
			if r := firstMatch(s.rules, req, st, cmd, true); r != nil {
				return found(r, s.session)
			}
		}
		return Decision{}, false
	}
	// A command is allowed by rules only when it is plain and every part is covered.
	if !cmd.allowable || cmd.opaque || len(cmd.top) == 0 {
		return Decision{}, false
	}
	var first *Rule
	firstSession := false
	for _, part := range cmd.top {
		var hit *Rule
		for _, s := range sources {
			for i := range s.rules {
				r := &s.rules[i]
				if r.tool == OpBash && r.allowMatch(part) {
					hit = r
					if first == nil || s.session && !firstSession {
						first, firstSession = r, s.session
					}
					break
				}
			}
			if hit != nil {
				break
			}
		}
		if hit == nil {
			return Decision{}, false
		}
	}
	return found(first, firstSession)
}

// defaults are the mode's answers when no rule decided.
func defaults(req *Request, st *State, cmd *command) Decision {
	_, session := sessionRuleFor(req, st, cmd)
	switch req.Kind {
	case KindRead, KindSearch:
		if _, in := pathglob.Within(st.Root, req.Path); in {
			return Decision{Verdict: Allow, Rule: "default", Reason: "reads in the project folder are allowed"}
		}
		if st.OutputDir != "" {
			if _, in := pathglob.Within(st.OutputDir, req.Path); in {
				return Decision{Verdict: Allow, Rule: "default", Reason: "reads of the session's own output folder are allowed"}
			}
		}
		return ask("default", "reads outside the project folder ask first", warning(req, st), session)
	case KindWrite, KindEdit:
		return ask("default", "edits ask first", warning(req, st), session)
	case KindCommand:
		if !req.Sandboxed {
			return ask("default", "commands outside the sandbox always ask first", warning(req, st), session)
		}
		if req.Dir != "" {
			if _, in := pathglob.Within(st.Root, req.Dir); !in {
				return ask("default", "sandboxed commands outside the project folder ask first", warning(req, st), false)
			}
		}
		if st.Mode == ModePlan {
			return Decision{Verdict: Allow, Rule: "mode", Reason: "plan mode: the command runs in the sandbox with the project read-only"}
		}
		return Decision{Verdict: Allow, Rule: "default", Reason: "the command runs in the sandbox"}
	case KindNetwork:
		if RegistriesAllowed(st) && hostAllowed(PackageRegistries, req.Host) {
			return Decision{Verdict: Allow, Rule: "default", Reason: req.Host + " is a package registry on Garuda's default allowlist"}
		}
		return ask("default", fmt.Sprintf("network access to %s asks first", req.Host), "", session)
	case KindMCPTool:
		return ask("default", fmt.Sprintf("MCP tool %s/%s asks first", req.Server, req.MCPTool), "", session)
	case KindConsent:
		return ask("default", fmt.Sprintf("%s %q needs your consent", strings.ReplaceAll(req.ConsentKind, "_", " "), req.ConsentName), "", false)
	}
	return deny("default", "unknown request: refused")
}

// warning is the line a question shows for requests that reach outside the project or the sandbox.
func warning(req *Request, st *State) string {
	switch req.Kind {
	case KindCommand:
		if !req.Sandboxed {
			return "Outside the sandbox: this command can read, change and send anything you can."
		}
		if req.Dir != "" {
			if _, in := pathglob.Within(st.Root, req.Dir); !in {
				return "The working folder " + req.Dir + " is outside the project folder."
			}
		}
	case KindRead, KindSearch:
		if _, in := pathglob.Within(st.Root, req.Path); !in {
			return req.Path + " is outside the project folder."
		}
	case KindWrite, KindEdit:
		if _, in := pathglob.Within(st.Root, req.Path); !in {
			return "Outside the project folder: " + req.Path
		}
	}
	return ""
}

// protectedAbs applies Protected to an absolute path: relative to the root inside it, else the whole path
// (so that ~/.bashrc is protected when the root is elsewhere).
func protectedAbs(p string, st *State) bool {
	if rel, in := pathglob.Within(st.Root, p); in {
		return Protected(rel) || pointed(rel, st) || homeProtected(p, st)
	}
	return Protected(strings.TrimPrefix(p, "/"))
}

// homeProtected applies HomeProtected to an absolute path, under the root by either of its names.
func homeProtected(p string, st *State) bool {
	for _, root := range []string{st.Root, st.RealRoot} {
		rel, in := pathglob.Within(root, p)
		home, ok := HomeIn(root, st.UserHome)
		if in && ok && HomeProtected(rel, home) {
			return true
		}
	}
	return false
}

func displayPath(p string, st *State) string {
	if rel, in := pathglob.Within(st.Root, p); in && rel != "" {
		return rel
	}
	return p
}

// SessionRule returns the rule that "Allow for this session" adds for req, and false where none may be made
// (then Decide's question offers only once and deny). Scope: write_file and edit_file, that tool on any
// non-protected path in the root; a read or search outside the root, that folder; a command outside the
// sandbox, its program and subcommand; web_fetch, that host; an MCP tool, that tool.
func SessionRule(req Request, st *State) (Rule, bool) {
	d := Decide(req, st)
	if d.Verdict != Ask || !containsChoice(d.Choices, ChoiceSession) {
		return Rule{}, false
	}
	checkRequest(&req)
	var cmd *command
	if req.Kind == KindCommand {
		cmd = analyzeCommand(req.Command)
	}
	return sessionRuleFor(&req, st, cmd)
}

func containsChoice(cs []Choice, c Choice) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func sessionRuleFor(req *Request, st *State, cmd *command) (Rule, bool) {
	var text string
	switch req.Kind {
	case KindWrite, KindEdit:
		if _, in := pathglob.Within(st.Root, req.Path); !in {
			return Rule{}, false
		}
		text = "edit_file(/**)"
		if req.Kind == KindWrite {
			text = "write_file(/**)"
		}
	case KindRead, KindSearch:
		dir := req.Path
		if req.Kind == KindRead {
			dir = filepath.Dir(req.Path)
		}
		// Never a whole tree that holds the user's home or Garuda's own folder.
		if dir == "/" || (st.UserHome != "" && inOrEqual(dir, st.UserHome)) || (st.Home != "" && inOrEqual(dir, st.Home)) {
			return Rule{}, false
		}
		if strings.ContainsAny(dir, "*?[\\") {
			return Rule{}, false
		}
		text = "read_file(/" + dir + "/**)"
	case KindCommand:
		if req.Sandboxed || !st.Team.UnsandboxedAllowed() {
			return Rule{}, false
		}
		r, ok := prefixRule(cmd)
		if !ok {
			return Rule{}, false
		}
		r.Source = "session"
		return r, true
	case KindNetwork:
		text = "web_fetch(domain:" + req.Host + ")"
		if req.Tool == OpNetwork {
			text = "network(domain:" + req.Host + ")"
		}
	case KindMCPTool:
		text = "mcp__" + req.Server + "__" + req.MCPTool
	default:
		return Rule{}, false
	}
	r, err := ParseRule(text)
	if err != nil {
		return Rule{}, false
	}
	if req.Kind == KindWrite || req.Kind == KindEdit {
		r.kinds = []Kind{req.Kind} // the spec: "the next call of the tool asks no question"
	}
	r.Source = "session"
	return r, true
}

// inOrEqual reports whether base is dir or lies under dir.
func inOrEqual(dir, base string) bool {
	_, in := pathglob.Within(dir, base)
	return in
}

// ReadDenyPatterns returns the absolute paths and globs ("**" any number of names) whose reading is denied,
// for the sandbox to hide from commands: Garuda's own folder and every read_file deny rule of the team, the
// user and the project. Patterns without a slash (any depth) become ROOT/**/NAME.
func ReadDenyPatterns(st *State) []string {
	if st == nil {
		return nil
	}
	var out []string
	if st.Home != "" {
		out = append(out, st.Home)
	}
	for _, s := range []*Settings{st.Team, st.User, st.Project} {
		if s == nil {
			continue
		}
		for _, r := range s.Deny {
			if !r.covers(KindRead) || r.tool == "mcp" || r.tool == OpBash {
				continue
			}
			if r.all {
				out = append(out, st.Root)
				continue
			}
			if r.path == nil {
				continue
			}
			rest := strings.Join(r.path.segs, "/")
			var p string
			switch r.path.base {
			case baseAbs:
				p = "/" + rest
			case baseHome:
				if st.UserHome == "" {
					continue
				}
				p = filepath.Join(st.UserHome, rest)
			case baseRoot:
				p = filepath.Join(st.Root, rest)
			case baseAny:
				p = st.Root + "/**/" + rest
			}
			out = append(out, p)
		}
	}
	return out
}
