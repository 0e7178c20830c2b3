package policy

import (
	"strings"
	"testing"
)

const (
	tRoot     = "/w/proj"
	tHome     = "/u/.garuda"
	tUserHome = "/u"
	tOut      = "/u/.garuda/sessions/s1/output"
)

func mustSettings(t testing.TB, name, data string) *Settings {
	t.Helper()
	s, err := ParseSettings(name, []byte(data))
	if err != nil {
		t.Fatalf("ParseSettings(%s): %v", name, err)
	}
	return s
}

func newState(mode Mode) *State {
	return &State{Root: tRoot, Home: tHome, UserHome: tUserHome, OutputDir: tOut, Mode: mode}
}

func has(cs []Choice, c Choice) bool { return containsChoice(cs, c) }

// TestDefaults covers every default of both modes.
func TestDefaults(t *testing.T) {
	type tc struct {
		name    string
		mode    Mode
		req     Request
		want    Verdict
		rule    string
		session bool   // the question offers "session"
		warn    string // substring of the warning
		reason  string // substring of the reason
	}
	cmd := func(c string, sandboxed bool) Request {
		return Request{Kind: KindCommand, Tool: "bash", Command: c, Sandboxed: sandboxed, Dir: tRoot}
	}
	cases := []tc{
		{"read in root", ModeBuild, Request{Kind: KindRead, Path: tRoot + "/a.go"}, Allow, "default", false, "", "project folder"},
		{"read root itself", ModeBuild, Request{Kind: KindSearch, Path: tRoot}, Allow, "default", false, "", ""},
		{"read outside root", ModeBuild, Request{Kind: KindRead, Path: "/etc/hosts"}, Ask, "default", true, "outside the project", "outside"},
		{"read sibling with root prefix", ModeBuild, Request{Kind: KindRead, Path: "/w/proj2/a"}, Ask, "default", true, "outside", ""},
		{"read output dir", ModeBuild, Request{Kind: KindRead, Path: tOut + "/cmd-1.txt"}, Allow, "default", false, "", "output"},
		{"read garuda home", ModeBuild, Request{Kind: KindRead, Path: tHome + "/credentials"}, Deny, "default", false, "", "credentials"},
		{"search over garuda home", ModeBuild, Request{Kind: KindSearch, Path: tUserHome}, Deny, "default", false, "", "Garuda's own folder"},
		{"write garuda home", ModeBuild, Request{Kind: KindWrite, Path: tHome + "/trust.json"}, Deny, "default", false, "", ""},
		{"write managed policy", ModeBuild, Request{Kind: KindWrite, Path: "/etc/garuda/policy.json"}, Deny, "default", false, "", ""},
		{"write in root", ModeBuild, Request{Kind: KindWrite, Tool: "write_file", Path: tRoot + "/a.go"}, Ask, "default", true, "", "edits ask"},
		{"edit in root", ModeBuild, Request{Kind: KindEdit, Tool: "edit_file", Path: tRoot + "/a.go"}, Ask, "default", true, "", ""},
		{"write outside root", ModeBuild, Request{Kind: KindWrite, Path: "/tmp/x"}, Ask, "default", false, "Outside the project folder", ""},
		{"write protected", ModeBuild, Request{Kind: KindEdit, Path: tRoot + "/.git/hooks/pre-commit"}, Ask, "default", false, "", "protected"},
		{"write home bashrc", ModeBuild, Request{Kind: KindWrite, Path: "/u/.bashrc"}, Ask, "default", false, "Outside", "protected"},
		{"sandboxed command", ModeBuild, cmd("rm -rf build", true), Allow, "default", false, "", "sandbox"},
		{"unsandboxed command", ModeBuild, cmd("curl https://x", false), Ask, "default", true, "Outside the sandbox", ""},
		{"unsandboxed compound: no session", ModeBuild, cmd("make && curl x", false), Ask, "default", false, "Outside the sandbox", ""},
		{"sandboxed, dir outside root", ModeBuild, Request{Kind: KindCommand, Command: "ls", Sandboxed: true, Dir: "/tmp"},
			Ask, "default", false, "outside the project", ""},
		{"network", ModeBuild, Request{Kind: KindNetwork, Tool: "web_fetch", Host: "Example.COM"}, Ask, "default", true, "", "example.com"},
		{"mcp tool", ModeBuild, Request{Kind: KindMCPTool, Tool: "mcp__gh__issues"}, Ask, "default", true, "", "gh/issues"},
		{"consent", ModeBuild, Request{Kind: KindConsent, ConsentKind: "hook", ConsentName: "fmt"}, Ask, "default", false, "", "consent"},

		{"plan: read", ModePlan, Request{Kind: KindRead, Path: tRoot + "/a.go"}, Allow, "default", false, "", ""},
		{"plan: read outside", ModePlan, Request{Kind: KindRead, Path: "/etc/hosts"}, Ask, "default", true, "", ""},
		{"plan: write", ModePlan, Request{Kind: KindWrite, Path: tRoot + "/a.go"}, Deny, "mode", false, "", "plan mode"},
		{"plan: edit protected", ModePlan, Request{Kind: KindEdit, Path: tRoot + "/.vscode/settings.json"}, Deny, "mode", false, "", "plan mode"},
		{"plan: sandboxed command", ModePlan, cmd("go test ./...", true), Allow, "mode", false, "", "read-only"},
		{"plan: unsandboxed", ModePlan, cmd("go test ./...", false), Deny, "mode", false, "", "plan mode"},

		{"bad path", ModeBuild, Request{Kind: KindRead, Path: tRoot + "/../etc/passwd"}, Deny, "default", false, "", "not absolute and clean"},
		{"relative path", ModeBuild, Request{Kind: KindRead, Path: "a.go"}, Deny, "default", false, "", ""},
		{"unknown kind", ModeBuild, Request{Kind: "teleport"}, Deny, "default", false, "", "unknown"},
		{"unknown consent", ModeBuild, Request{Kind: KindConsent, ConsentKind: "x", ConsentName: "y"}, Deny, "default", false, "", ""},
		{"unknown mode", "yolo", Request{Kind: KindRead, Path: tRoot + "/a"}, Deny, "mode", false, "", "unknown mode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.req, newState(c.mode))
			if d.Verdict != c.want || d.Rule != c.rule {
				t.Fatalf("got %v by %q (%s), want %v by %q", d.Verdict, d.Rule, d.Reason, c.want, c.rule)
			}
			if !strings.Contains(d.Reason, c.reason) || !strings.Contains(d.Warning, c.warn) {
				t.Errorf("reason %q warning %q: want %q and %q in them", d.Reason, d.Warning, c.reason, c.warn)
			}
			if d.Verdict == Ask {
				if !has(d.Choices, ChoiceOnce) || !has(d.Choices, ChoiceDeny) || has(d.Choices, ChoiceSession) != c.session {
					t.Errorf("choices %v, want session=%v", d.Choices, c.session)
				}
				_, ok := SessionRule(c.req, newState(c.mode))
				if ok != c.session {
					t.Errorf("SessionRule ok=%v, want %v", ok, c.session)
				}
			} else if len(d.Choices) != 0 {
				t.Errorf("choices %v on a %v", d.Choices, d.Verdict)
			}
		})
	}
}

// TestRuleForms covers each rule form, Claude's aliases and the precedence deny > ask > allow.
func TestRuleForms(t *testing.T) {
	type tc struct {
		rules string // user settings.json
		req   Request
		want  Verdict
	}
	unsb := func(c string) Request { return Request{Kind: KindCommand, Command: c, Dir: tRoot} }
	cases := []tc{
		{`{"permissions":{"allow":["bash(npm run test *)"]}}`, unsb("npm run test"), Allow},
		{`{"permissions":{"allow":["bash(npm run test *)"]}}`, unsb("npm run test -- --watch"), Allow},
		{`{"permissions":{"allow":["bash(npm run test:*)"]}}`, unsb("npm run test -- -u"), Allow},
		{`{"permissions":{"allow":["Bash(npm run test:*)"]}}`, unsb("npm run testx"), Ask},
		{`{"permissions":{"allow":["bash(git status)"]}}`, unsb("git status"), Allow},
		{`{"permissions":{"allow":["bash(git status)"]}}`, unsb("git status --short"), Ask},
		{`{"permissions":{"allow":["bash(git * --oneline)"]}}`, unsb("git log --oneline"), Allow},
		{`{"permissions":{"allow":["bash"]}}`, unsb("anything at all"), Allow},
		{`{"permissions":{"allow":["bash(go *)","bash(grep *)"]}}`, unsb("go test ./... 2>&1 | grep FAIL"), Allow},
		{`{"permissions":{"allow":["bash(go *)"]}}`, unsb("go test ./... | grep FAIL"), Ask},
		{`{"permissions":{"allow":["bash(go *)"]}}`, unsb("go vet $PKG"), Allow},
		{`{"permissions":{"deny":["bash(git push)"]}}`, Request{Kind: KindCommand, Command: "git push origin main", Sandboxed: true}, Deny},
		{`{"permissions":{"ask":["bash(git push *)"]}}`, Request{Kind: KindCommand, Command: "git push", Sandboxed: true}, Ask},
		{`{"permissions":{"deny":["read_file(./secrets/**)"]}}`, Request{Kind: KindRead, Path: tRoot + "/secrets/k.pem"}, Deny},
		{`{"permissions":{"deny":["Read(./secrets)"]}}`, Request{Kind: KindRead, Path: tRoot + "/secrets/a/b"}, Deny},
		{`{"permissions":{"deny":["Read(./secrets)"]}}`, Request{Kind: KindRead, Path: tRoot + "/SECRETS/a"}, Deny},
		{`{"permissions":{"deny":["read_file(*.env)"]}}`, Request{Kind: KindRead, Path: tRoot + "/a/b/prod.env"}, Deny},
		{`{"permissions":{"deny":["read_file(*.env)"]}}`, Request{Kind: KindSearch, Tool: "grep", Path: tRoot + "/.env"}, Deny},
		{`{"permissions":{"deny":["read_file(*.env)"]}}`, Request{Kind: KindRead, Path: tRoot + "/a/env.go"}, Allow},
		{`{"permissions":{"deny":["read_file(~/.aws/**)"]}}`, Request{Kind: KindRead, Path: "/u/.aws/credentials"}, Deny},
		{`{"permissions":{"deny":["read_file(//etc/shadow)"]}}`, Request{Kind: KindRead, Path: "/etc/shadow"}, Deny},
		{`{"permissions":{"allow":["read_file(//opt/docs/**)"]}}`, Request{Kind: KindRead, Path: "/opt/docs/a.md"}, Allow},
		{`{"permissions":{"allow":["read_file(//opt/docs/**)"]}}`, Request{Kind: KindRead, Path: "/opt/DOCS/a.md"}, Ask},
		{`{"permissions":{"allow":["edit_file(src/**)"]}}`, Request{Kind: KindEdit, Path: tRoot + "/src/a.go"}, Allow},
		{`{"permissions":{"allow":["Edit(src/**)"]}}`, Request{Kind: KindWrite, Path: tRoot + "/src/new.go"}, Allow},
		{`{"permissions":{"allow":["edit_file(src/**)"]}}`, Request{Kind: KindEdit, Path: tRoot + "/lib/a.go"}, Ask},
		{`{"permissions":{"allow":["Write(/docs/*.md)"]}}`, Request{Kind: KindWrite, Path: tRoot + "/docs/a.md"}, Allow},
		{`{"permissions":{"allow":["edit_file(**)"]}}`, Request{Kind: KindEdit, Path: tRoot + "/.idea/x.xml"}, Ask},
		{`{"permissions":{"allow":["web_fetch(domain:example.com)"]}}`, Request{Kind: KindNetwork, Host: "example.com"}, Allow},
		{`{"permissions":{"allow":["WebFetch(domain:*.example.com)"]}}`, Request{Kind: KindNetwork, Host: "api.example.com"}, Allow},
		{`{"permissions":{"allow":["web_fetch(domain:example.com)"]}}`, Request{Kind: KindNetwork, Host: "example.com.evil.io"}, Ask},
		{`{"permissions":{"allow":["mcp__gh__issues"]}}`, Request{Kind: KindMCPTool, Tool: "mcp__gh__issues"}, Allow},
		{`{"permissions":{"allow":["mcp__gh"]}}`, Request{Kind: KindMCPTool, Server: "gh", MCPTool: "pulls"}, Allow},
		{`{"permissions":{"allow":["mcp__gh__issues"]}}`, Request{Kind: KindMCPTool, Tool: "mcp__gh__pulls"}, Ask},
		{`{"permissions":{"deny":["mcp__evil"]}}`, Request{Kind: KindConsent, ConsentKind: "mcp_server", ConsentName: "evil"}, Deny},
		{`{"permissions":{"allow":["mcp__evil"]}}`, Request{Kind: KindConsent, ConsentKind: "mcp_server", ConsentName: "evil"}, Ask},
		// deny beats ask beats allow
		{`{"permissions":{"allow":["bash(git *)"],"ask":["bash(git push *)"],"deny":["bash(git push --force *)"]}}`,
			unsb("git push --force"), Deny},
		{`{"permissions":{"allow":["bash(git *)"],"ask":["bash(git push *)"]}}`, unsb("git push"), Ask},
		{`{"permissions":{"allow":["bash(git *)"],"ask":["bash(git push *)"]}}`, unsb("git pull"), Allow},
		{`{"permissions":{"allow":["read_file(**)"],"deny":["read_file(.env)"]}}`, Request{Kind: KindRead, Path: tRoot + "/.env"}, Deny},
	}
	for _, c := range cases {
		st := newState(ModeBuild)
		st.User = mustSettings(t, "/u/.garuda/settings.json", c.rules)
		if d := Decide(c.req, st); d.Verdict != c.want {
			t.Errorf("%s with %+v: got %v (%s: %s), want %v", c.rules, c.req, d.Verdict, d.Rule, d.Reason, c.want)
		}
	}
}

// TestRuleNamesFileAndEntry checks that the deciding rule is reported as "<file>: <entry>".
func TestRuleNamesFileAndEntry(t *testing.T) {
	st := newState(ModeBuild)
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"deny":["bash(rm *)"]}}`)
	d := Decide(Request{Kind: KindCommand, Command: "rm -rf x", Sandboxed: true}, st)
	if d.Rule != "/u/.garuda/settings.json: bash(rm *)" || !strings.Contains(d.Reason, "bash(rm *)") {
		t.Fatalf("rule %q reason %q", d.Rule, d.Reason)
	}
}

// TestProjectTrust: a project's allow rules apply only when trusted; its deny and ask rules always apply.
func TestProjectTrust(t *testing.T) {
	proj := mustSettings(t, tRoot+"/.garuda/settings.json",
		`{"permissions":{"allow":["bash(make *)"],"deny":["bash(make deploy *)"],"ask":["read_file(docs/**)"]}}`)
	req := Request{Kind: KindCommand, Command: "make build", Dir: tRoot}
	for _, trusted := range []bool{false, true} {
		st := newState(ModeBuild)
		st.Project, st.ProjectTrusted = proj, trusted
		want := Ask
		if trusted {
			want = Allow
		}
		if d := Decide(req, st); d.Verdict != want {
			t.Errorf("trusted=%v: got %v (%s), want %v", trusted, d.Verdict, d.Reason, want)
		}
		if d := Decide(Request{Kind: KindCommand, Command: "make deploy", Sandboxed: true}, st); d.Verdict != Deny {
			t.Errorf("trusted=%v: project deny did not apply: %v", trusted, d.Verdict)
		}
		if d := Decide(Request{Kind: KindRead, Path: tRoot + "/docs/a"}, st); d.Verdict != Ask {
			t.Errorf("trusted=%v: project ask did not apply: %v", trusted, d.Verdict)
		}
		notice := UntrustedNotice(st)
		if trusted != (notice == "") || (!trusted && (!strings.Contains(notice, "garuda trust") || !strings.Contains(notice, proj.Name))) {
			t.Errorf("trusted=%v: notice %q", trusted, notice)
		}
	}
}

// TestSessionRules checks each session rule's scope and that it applies.
func TestSessionRules(t *testing.T) {
	st := newState(ModeBuild)
	type tc struct {
		req      Request
		text     string
		covers   []Request // asked before, allowed with the rule
		notCover []Request // still asks
	}
	cases := []tc{
		{Request{Kind: KindWrite, Tool: "write_file", Path: tRoot + "/a.go"}, "write_file(/**)",
			[]Request{{Kind: KindWrite, Path: tRoot + "/b/c.go"}},
			[]Request{{Kind: KindEdit, Path: tRoot + "/b/c.go"}, {Kind: KindWrite, Path: tRoot + "/.git/hooks/x"},
				{Kind: KindWrite, Path: "/tmp/x"}}},
		{Request{Kind: KindEdit, Tool: "edit_file", Path: tRoot + "/a.go"}, "edit_file(/**)",
			[]Request{{Kind: KindEdit, Path: tRoot + "/z.go"}},
			[]Request{{Kind: KindWrite, Path: tRoot + "/z.go"}, {Kind: KindEdit, Path: tRoot + "/.GIT/config"}}},
		{Request{Kind: KindRead, Path: "/opt/lib/a.h"}, "read_file(//opt/lib/**)",
			[]Request{{Kind: KindRead, Path: "/opt/lib/sub/b.h"}},
			[]Request{{Kind: KindRead, Path: "/opt/other"}}},
		{Request{Kind: KindCommand, Command: "git push origin main", Dir: tRoot}, "bash(git push *)",
			[]Request{{Kind: KindCommand, Command: "git push", Dir: tRoot}},
			[]Request{{Kind: KindCommand, Command: "git push; rm -rf ~", Dir: tRoot}, {Kind: KindCommand, Command: "git pull", Dir: tRoot}}},
		{Request{Kind: KindNetwork, Host: "example.com"}, "web_fetch(domain:example.com)",
			[]Request{{Kind: KindNetwork, Host: "example.com"}}, []Request{{Kind: KindNetwork, Host: "x.example.com"}}},
	}
	for _, c := range cases {
		r, ok := SessionRule(c.req, st)
		if !ok || r.Text != c.text {
			t.Errorf("SessionRule(%+v) = %q %v, want %q", c.req, r.Text, ok, c.text)
			continue
		}
		with := *st
		with.SessionRules = []Rule{r}
		for _, q := range c.covers {
			if d := Decide(q, st); d.Verdict != Ask { // negative control: asks without the rule
				t.Errorf("%+v without the session rule: %v", q, d.Verdict)
			}
			if d := Decide(q, &with); d.Verdict != Allow || d.Rule != "session rule" {
				t.Errorf("%s does not allow %+v: %v %s", r.Text, q, d.Verdict, d.Reason)
			}
		}
		for _, q := range c.notCover {
			if d := Decide(q, &with); d.Verdict == Allow {
				t.Errorf("%s allows %+v", r.Text, q)
			}
		}
	}
	// No session rule for a read whose folder holds the user's home, or for wrappers and shells.
	for _, req := range []Request{
		{Kind: KindRead, Path: "/u/notes.txt"},
		{Kind: KindRead, Path: "/x"},
		{Kind: KindCommand, Command: "sh -c 'make'", Dir: tRoot},
		{Kind: KindCommand, Command: "env make", Dir: tRoot},
		{Kind: KindCommand, Command: "$X make", Dir: tRoot},
	} {
		if r, ok := SessionRule(req, st); ok {
			t.Errorf("SessionRule(%+v) = %q, want none", req, r.Text)
		}
	}
}

// TestTeamPolicy: team keys and rules come first and nothing loosens them.
func TestTeamPolicy(t *testing.T) {
	team := MergeTeam(mustSettings(t, "/etc/garuda/policy.json", `{
  "permissions": {"deny": ["bash(curl *)", "read_file(//srv/keys/**)"], "ask": ["bash(git push *)"]},
  "allow_unsandboxed": false,
  "network_allowlist": ["*.example.com"],
  "allowed_modes": ["build", "plan"]
}`), mustSettings(t, "/u/.garuda/policy.json", `{"allowed_modes": ["build"]}`))
	loose := `{"permissions":{"allow":["bash","read_file(//srv/**)","web_fetch(domain:evil.io)"]}}`
	cases := []struct {
		req  Request
		mode Mode
		want Verdict
	}{
		{Request{Kind: KindCommand, Command: "curl x", Sandboxed: true}, ModeBuild, Deny},
		{Request{Kind: KindCommand, Command: "make", Sandboxed: false}, ModeBuild, Deny},
		{Request{Kind: KindCommand, Command: "make", Sandboxed: true}, ModeBuild, Allow},
		{Request{Kind: KindRead, Path: "/srv/keys/a"}, ModeBuild, Deny},
		{Request{Kind: KindRead, Path: "/srv/other"}, ModeBuild, Allow},
		{Request{Kind: KindNetwork, Host: "evil.io"}, ModeBuild, Deny},
		{Request{Kind: KindConsent, ConsentKind: "network", ConsentName: "evil.io"}, ModeBuild, Deny},
		{Request{Kind: KindNetwork, Host: "api.example.com"}, ModeBuild, Ask},
		{Request{Kind: KindCommand, Command: "git push", Sandboxed: true}, ModeBuild, Ask},
		{Request{Kind: KindRead, Path: tRoot + "/a"}, ModePlan, Deny}, // home policy.json narrowed the modes
	}
	for _, c := range cases {
		st := newState(c.mode)
		st.Team = team
		st.User = mustSettings(t, "/u/.garuda/settings.json", loose)
		st.Project, st.ProjectTrusted = mustSettings(t, tRoot+"/.garuda/settings.json", loose), true
		r, _ := ParseRule("bash(git push *)")
		st.SessionRules = []Rule{r}
		d := Decide(c.req, st)
		if d.Verdict != c.want {
			t.Errorf("%+v in %s: got %v (%s), want %v", c.req, c.mode, d.Verdict, d.Reason, c.want)
		}
		if c.want != Allow && c.want != Ask && d.Rule != "team policy" {
			t.Errorf("%+v: decided by %q, want team policy", c.req, d.Rule)
		}
		// Negative control: without the team policy the same user, project and session rules let it through.
		if c.want == Deny {
			st.Team = nil
			if d := Decide(c.req, st); d.Verdict == Deny {
				t.Errorf("control %+v: denied without team policy (%s)", c.req, d.Reason)
			}
		}
	}
	// A team policy that failed to load denies everything, with its error.
	st := newState(ModeBuild)
	st.TeamErr = errString("settings /etc/garuda/policy.json: line 3: unknown key \"alow\"")
	d := Decide(Request{Kind: KindRead, Path: tRoot + "/a"}, st)
	if d.Verdict != Deny || !strings.Contains(d.Reason, `unknown key "alow"`) {
		t.Fatalf("broken team policy: %v %q", d.Verdict, d.Reason)
	}
	st.TeamErr = nil // control
	if d := Decide(Request{Kind: KindRead, Path: tRoot + "/a"}, st); d.Verdict != Allow {
		t.Fatalf("control: %v", d.Verdict)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestReadDenyPatterns(t *testing.T) {
	st := newState(ModeBuild)
	st.Team = mustSettings(t, "/etc/garuda/policy.json", `{"permissions":{"deny":["read_file(//srv/keys)"]}}`)
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"deny":["Read(~/.aws/**)","bash(rm *)","edit_file(x)"]}}`)
	st.Project = mustSettings(t, tRoot+"/.garuda/settings.json", `{"permissions":{"deny":["read_file(./secrets/**)","read_file(*.pem)"]}}`)
	got := strings.Join(ReadDenyPatterns(st), " ")
	want := "/u/.garuda /srv/keys /u/.aws/** /w/proj/secrets/** /w/proj/**/*.pem"
	if got != want {
		t.Fatalf("ReadDenyPatterns = %q, want %q", got, want)
	}
}

func TestGarudaHomeCaseFolded(t *testing.T) {
	st := newState(ModeBuild)
	for _, req := range []Request{{Kind: KindRead, Path: "/u/.GARUDA/credentials"}, {Kind: KindWrite, Path: "/U/.Garuda/trust.json"},
		{Kind: KindWrite, Path: "/ETC/garuda/policy.json"}} {
		if d := Decide(req, st); d.Verdict != Deny {
			t.Errorf("%+v: %v", req, d.Verdict)
		}
		// Negative control: with no home folder known, and no built-in rule, these only ask.
		bare := newState(ModeBuild)
		bare.Home = ""
		if d := Decide(req, bare); d.Verdict == Deny && !strings.HasPrefix(req.Path, "/ETC") {
			t.Errorf("control %+v: %v", req, d.Verdict)
		}
	}
}

// TestAuditFolderOutOfReach: the folder team policy moves the audit log to is, like $GARUDA_HOME, out of the file
// tools' reach whatever the rules or a question's answer: no read, search (of it or of a folder holding it),
// write or edit, not even with a rule allowing them. Control: without the team's audit_dir they only ask, or are
// allowed by the rule.
func TestAuditFolderOutOfReach(t *testing.T) {
	team := mustSettings(t, "/etc/garuda/policy.json", `{"audit_dir": "/var/log/garuda"}`)
	user := mustSettings(t, "user", `{"permissions": {"allow": ["Read(//var/**)", "Edit(//var/**)", "Glob(//var/**)"]}}`)
	reqs := []Request{{Kind: KindRead, Path: "/var/log/garuda/a.jsonl"}, {Kind: KindSearch, Tool: OpGrep, Path: "/var/log"},
		{Kind: KindWrite, Path: "/var/log/garuda/a.jsonl"}, {Kind: KindEdit, Path: "/var/log/garuda/new.jsonl"}}
	for _, req := range reqs {
		st := newState(ModeBuild)
		st.Team, st.User = team, user
		if d := Decide(req, st); d.Verdict != Deny {
			t.Errorf("%+v: %v (%s)", req, d.Verdict, d.Reason)
		}
		st.Team = nil
		if d := Decide(req, st); d.Verdict == Deny {
			t.Errorf("control %+v: %v (%s)", req, d.Verdict, d.Reason)
		}
	}
}

// TestRootReachedThroughASymlink: with the root opened as /w/proj, a symlink to /data/proj, a path by the real name
// (what pwd, compilers and find print in commands, which run there) is decided as the same path by the root's name:
// a read is allowed, not asked as outside (the control: a sibling of the real root still asks), and whatever either
// spelling denies or protects holds for both.
func TestRootReachedThroughASymlink(t *testing.T) {
	deny := mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"deny":["Read(//data/proj/secret/**)","Read(//w/proj/keys/**)"]}}`)
	cases := []struct {
		req  Request
		want Verdict
	}{
		{Request{Kind: KindRead, Tool: OpReadFile, Path: "/data/proj/a.go"}, Allow},
		{Request{Kind: KindSearch, Tool: OpGrep, Path: "/data/proj/src"}, Allow},
		{Request{Kind: KindRead, Tool: OpReadFile, Path: "/w/proj/a.go"}, Allow},
		{Request{Kind: KindRead, Tool: OpReadFile, Path: "/data/proj2/a.go"}, Ask},
		{Request{Kind: KindRead, Tool: OpReadFile, Path: "/data/proj/secret/k"}, Deny},
		{Request{Kind: KindRead, Tool: OpReadFile, Path: "/w/proj/secret/k"}, Deny},
		{Request{Kind: KindRead, Tool: OpReadFile, Path: "/data/proj/keys/k"}, Deny},
		{Request{Kind: KindEdit, Tool: OpEditFile, Path: "/data/proj/keys/k"}, Deny},
	}
	for _, c := range cases {
		st := newState(ModeBuild)
		st.RealRoot, st.User = "/data/proj", deny
		if d := Decide(c.req, st); d.Verdict != c.want {
			t.Errorf("%s %s: %v (%s), want %v", c.req.Tool, c.req.Path, d.Verdict, d.Reason, c.want)
		}
	}
	st := newState(ModeBuild)
	st.RealRoot = "/data/proj"
	d := Decide(Request{Kind: KindWrite, Tool: OpWriteFile, Path: "/data/proj/.git/hooks/pre-commit"}, st)
	if d.Verdict != Ask || has(d.Choices, ChoiceSession) || !strings.Contains(d.Reason, "protected") {
		t.Errorf("a hook by the real name: %v %v (%s)", d.Verdict, d.Choices, d.Reason)
	}
}

// TestPlanModeBeatsRules: allow and session rules do not lift plan mode; in build mode (the control) they do.
func TestPlanModeBeatsRules(t *testing.T) {
	for _, mode := range []Mode{ModePlan, ModeBuild} {
		st := newState(mode)
		st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"allow":["edit_file(**)","bash"]}}`)
		sr, _ := ParseRule("bash(make *)")
		st.SessionRules = []Rule{sr}
		e := Decide(Request{Kind: KindEdit, Path: tRoot + "/a.go"}, st)
		c := Decide(Request{Kind: KindCommand, Command: "make", Dir: tRoot}, st)
		want := Deny
		if mode == ModeBuild {
			want = Allow
		}
		if e.Verdict != want || c.Verdict != want {
			t.Errorf("%s: edit %v, unsandboxed command %v, want %v", mode, e.Verdict, c.Verdict, want)
		}
	}
}

func TestSearchToolRules(t *testing.T) {
	st := newState(ModeBuild)
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"allow":["glob(//opt/**)"]}}`)
	if d := Decide(Request{Kind: KindSearch, Tool: "glob", Path: "/opt/x"}, st); d.Verdict != Allow {
		t.Errorf("glob: %v", d.Verdict)
	}
	if d := Decide(Request{Kind: KindSearch, Tool: "grep", Path: "/opt/x"}, st); d.Verdict != Ask {
		t.Errorf("grep under a glob rule: %v", d.Verdict)
	}
}
