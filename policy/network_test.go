package policy

import (
	"strings"
	"testing"
)

// TestNetworkDecisions is the network policy: which rules cover web_fetch and the commands' proxy, the registry
// defaults and their opt-out, team policy first, IP literals, and which decisions open private addresses.
func TestNetworkDecisions(t *testing.T) {
	fetch := func(h string) Request { return Request{Kind: KindNetwork, Tool: OpWebFetch, Host: h} }
	proxy := func(h string) Request { return Request{Kind: KindNetwork, Tool: OpNetwork, Host: h} }
	cases := []struct {
		name          string
		team, user    string
		mode          Mode
		req           Request
		want          Verdict
		opensPrivate  bool
		reason, rule  string // substrings
		sessionChoice bool
	}{
		{name: "no rule: fetch asks", req: fetch("example.com"), want: Ask, opensPrivate: true, sessionChoice: true},
		{name: "no rule: proxy asks", req: proxy("example.com"), want: Ask, opensPrivate: true, sessionChoice: true},
		{name: "network rule covers fetch", user: `{"permissions":{"allow":["network(domain:*.example.com)"]}}`,
			req: fetch("api.example.com"), want: Allow},
		{name: "network rule covers proxy", user: `{"permissions":{"allow":["network(domain:*.example.com)"]}}`,
			req: proxy("example.com"), want: Allow},
		{name: "web_fetch rule: fetch only", user: `{"permissions":{"allow":["web_fetch(domain:github.com)"]}}`,
			req: fetch("github.com"), want: Allow, opensPrivate: true},
		{name: "web_fetch rule: not the proxy", user: `{"permissions":{"allow":["web_fetch(domain:github.com)"]}}`,
			req: proxy("github.com"), want: Ask, opensPrivate: true},
		{name: "network deny covers fetch", user: `{"permissions":{"deny":["network(domain:evil.io)"]}}`,
			req: fetch("evil.io"), want: Deny},
		{name: "web_fetch deny leaves proxy", user: `{"permissions":{"deny":["web_fetch(domain:evil.io)"]}}`,
			req: proxy("evil.io"), want: Ask, opensPrivate: true},
		{name: "deny beats allow", user: `{"permissions":{"allow":["network"],"deny":["network(domain:*.evil.io)"]}}`,
			req: proxy("a.evil.io"), want: Deny},
		{name: "network without pattern: every host, no private", user: `{"permissions":{"allow":["network"]}}`,
			req: proxy("intranet"), want: Allow},
		{name: "exact name opens private", user: `{"permissions":{"allow":["network(domain:db.internal)"]}}`,
			req: proxy("DB.Internal."), want: Allow, opensPrivate: true},
		{name: "wildcard does not open private", user: `{"permissions":{"allow":["network(domain:*.internal)"]}}`,
			req: proxy("db.internal"), want: Allow},
		{name: "a wildcard first, the exact name too", user: `{"permissions":{"allow":["network","network(domain:db.internal)"]}}`,
			req: proxy("db.internal"), want: Allow, opensPrivate: true},
		{name: "IP literal rule", user: `{"permissions":{"allow":["network(domain:10.0.0.5)"]}}`,
			req: proxy("10.0.0.5"), want: Allow, opensPrivate: true},
		{name: "IPv6 literal in brackets", user: `{"permissions":{"allow":["network(domain:[::1])"]}}`,
			req: fetch("::1"), want: Allow, opensPrivate: true},
		{name: "IPv4-mapped IPv6 request is its IPv4", user: `{"permissions":{"allow":["network(domain:127.0.0.1)"]}}`,
			req: fetch("[::ffff:127.0.0.1]"), want: Allow, opensPrivate: true},
		{name: "IP literal rule is not a prefix", user: `{"permissions":{"allow":["network(domain:10.0.0.5)"]}}`,
			req: proxy("10.0.0.50"), want: Ask, opensPrivate: true},
		{name: "registry default: proxy", req: proxy("registry.npmjs.org"), want: Allow, reason: "package registry"},
		{name: "registry default: fetch", req: fetch("proxy.golang.org"), want: Allow, reason: "package registry"},
		{name: "registry default: not its subdomains", req: proxy("evil.registry.npmjs.org"), want: Ask, opensPrivate: true},
		{name: "registry opt-out by the user", user: `{"package_registries":false}`, req: proxy("pypi.org"), want: Ask,
			opensPrivate: true},
		{name: "registry opt-out by the team", team: `{"package_registries":false}`, req: proxy("crates.io"), want: Ask,
			opensPrivate: true},
		{name: "team allowlist beats the registries", team: `{"network_allowlist":["*.corp.io"]}`,
			req: proxy("registry.npmjs.org"), want: Deny, rule: "team policy"},
		{name: "team allowlist beats a user allow", team: `{"network_allowlist":["*.corp.io"]}`,
			user: `{"permissions":{"allow":["network(domain:github.com)"]}}`, req: fetch("github.com"), want: Deny},
		{name: "team deny beats a user allow", team: `{"permissions":{"deny":["network(domain:*.paste.io)"]}}`,
			user: `{"permissions":{"allow":["network(domain:x.paste.io)"]}}`, req: proxy("x.paste.io"), want: Deny},
		{name: "team ask beats a user allow", team: `{"permissions":{"ask":["network(domain:*.io)"]}}`,
			user: `{"permissions":{"allow":["network(domain:x.io)"]}}`, req: proxy("x.io"), want: Ask, opensPrivate: true},
		{name: "team allow", team: `{"permissions":{"allow":["network(domain:git.corp.io)"]}}`,
			req: proxy("git.corp.io"), want: Allow, opensPrivate: true},
		{name: "plan mode: the same policy", mode: ModePlan, user: `{"permissions":{"allow":["network(domain:x.io)"]}}`,
			req: proxy("x.io"), want: Allow, opensPrivate: true},
		{name: "plan mode: registries", mode: ModePlan, req: proxy("pypi.org"), want: Allow},
		{name: "a wildcard is no host", req: proxy("*.example.com"), want: Deny},
		{name: "a zone is no host", req: proxy("fe80::1%eth0"), want: Deny},
		{name: "a space is no host", req: proxy("exa mple.com"), want: Deny},
		{name: "decimal IPv4 spelling", req: fetch("2130706433"), want: Deny},
		{name: "octal IPv4 spelling", req: fetch("0177.0.0.1"), want: Deny},
		{name: "short IPv4 spelling", req: fetch("127.1"), want: Deny},
		{name: "hex IPv4 spelling", req: fetch("0x7f.0.0.1"), want: Deny},
		{name: "hex IPv4 word", req: fetch("0x7f000001"), want: Deny},
		{name: "a digit inside a name is fine", req: fetch("1password.com"), want: Ask, opensPrivate: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode := c.mode
			if mode == "" {
				mode = ModeBuild
			}
			st := newState(mode)
			if c.team != "" {
				st.Team = mustSettings(t, "/etc/garuda/policy.json", c.team)
			}
			if c.user != "" {
				st.User = mustSettings(t, "/u/.garuda/settings.json", c.user)
			}
			d := Decide(c.req, st)
			if d.Verdict != c.want || d.OpensPrivate != c.opensPrivate || !strings.Contains(d.Reason, c.reason) ||
				!strings.Contains(d.Rule, c.rule) || (c.sessionChoice && !has(d.Choices, ChoiceSession)) {
				t.Errorf("Decide(%+v) = %v opensPrivate=%v (%s: %s) choices %v, want %v opensPrivate=%v",
					c.req, d.Verdict, d.OpensPrivate, d.Rule, d.Reason, d.Choices, c.want, c.opensPrivate)
			}
		})
	}
}

func TestNetworkRuleParse(t *testing.T) {
	for _, bad := range []string{"network(domain:*.10.0.0.1)", "network(domain:[::1)", "network(10.0.0.1)",
		"network(domain:fe80::1%eth0)", "network(domain:a..b)", "network(domain:ex ample.com)", "network(domain:)"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q): no error", bad)
		}
	}
	for in, host := range map[string]string{"network(domain:[::1])": "::1", "network(domain:::FFFF:10.0.0.1)": "10.0.0.1",
		"network(domain:Registry.NPMJS.org.)": "registry.npmjs.org", "network(domain:*.Corp.io)": "*.corp.io"} {
		r, err := ParseRule(in)
		if err != nil || r.host != host {
			t.Errorf("ParseRule(%q) = %q, %v; want host %q", in, r.host, err, host)
		}
	}
}

// TestNetworkSessionRule: "Allow for this session" of a command's connection adds a network rule for that host,
// of a web_fetch a web_fetch rule; each opens only that host.
func TestNetworkSessionRule(t *testing.T) {
	st := newState(ModeBuild)
	for _, c := range []struct {
		req  Request
		text string
	}{
		{Request{Kind: KindNetwork, Tool: OpNetwork, Host: "api.github.com"}, "network(domain:api.github.com)"},
		{Request{Kind: KindNetwork, Tool: OpWebFetch, Host: "api.github.com"}, "web_fetch(domain:api.github.com)"},
	} {
		r, ok := SessionRule(c.req, st)
		if !ok || r.Text != c.text {
			t.Fatalf("SessionRule(%+v) = %q %v, want %q", c.req, r.Text, ok, c.text)
		}
		with := *st
		with.SessionRules = []Rule{r}
		if d := Decide(c.req, &with); d.Verdict != Allow || !d.OpensPrivate {
			t.Errorf("with %s: %v %v", r.Text, d.Verdict, d.OpensPrivate)
		}
		other := c.req
		other.Host = "x.api.github.com"
		if d := Decide(other, &with); d.Verdict != Ask {
			t.Errorf("with %s, %s: %v", r.Text, other.Host, d.Verdict)
		}
	}
}

func TestNetworkHint(t *testing.T) {
	st := newState(ModeBuild)
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"deny":["network(domain:evil.io)"]}}`)
	req := Request{Kind: KindNetwork, Tool: OpNetwork, Host: "evil.io"}
	if h := NetworkHint(req, Decide(req, st)); !strings.Contains(h, `remove the rule "network(domain:evil.io)"`) {
		t.Errorf("hint for a user deny: %q", h)
	}
	req.Host = "x.io"
	if h := NetworkHint(req, Decision{Verdict: Deny, Rule: "default", Reason: "no prompt is running"}); h != "" {
		t.Errorf("hint for a default deny: %q", h)
	}
	if h := NetworkHint(req, Decision{Verdict: Ask, Rule: "default"}); !strings.Contains(h, `"network(domain:x.io)"`) {
		t.Errorf("hint for an unanswerable question: %q", h)
	}
	st.Team = mustSettings(t, "/etc/garuda/policy.json", `{"network_allowlist":[]}`)
	if h := NetworkHint(req, Decide(req, st)); !strings.Contains(h, "team policy") {
		t.Errorf("hint for team policy: %q", h)
	}
}

// web_search is a consent: asked by default, allowed or denied by a rule; a web_search rule says nothing of other
// consents.
func TestWebSearchConsent(t *testing.T) {
	req := Request{Kind: KindConsent, Tool: OpWebSearch, ConsentKind: OpWebSearch, ConsentName: "anthropic"}
	for rules, want := range map[string]Verdict{
		`{}`: Ask,
		`{"permissions":{"allow":["web_search"]}}`:                      Allow,
		`{"permissions":{"allow":["WebSearch"],"deny":["web_search"]}}`: Deny,
	} {
		st := newState(ModeBuild)
		st.User = mustSettings(t, "/u/.garuda/settings.json", rules)
		if d := Decide(req, st); d.Verdict != want {
			t.Errorf("%s: %v (%s), want %v", rules, d.Verdict, d.Reason, want)
		}
	}
	st := newState(ModeBuild)
	st.User = mustSettings(t, "/u/.garuda/settings.json", `{"permissions":{"allow":["web_search"]}}`)
	if d := Decide(Request{Kind: KindConsent, ConsentKind: "hook", ConsentName: "fmt"}, st); d.Verdict != Ask {
		t.Errorf("a web_search rule allowed a hook: %v", d.Verdict)
	}
	if _, err := ParseRule("web_search(x)"); err == nil {
		t.Error("web_search(x) parsed")
	}
}
