package runner

import (
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

func TestNormHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "127.0.0.2": "127.0.0.2", "[::1]": "::1", "::ffff:127.0.0.2": "127.0.0.2",
		"http://example.com": "", "example.com:443": "", "*.example.com": "", "": "", "a..b": "", "[::1": "", "fe80::1%eth0": "",
	} {
		got, err := NormHost(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("NormHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Each flag answers only the questions the broker says are its own: by the server, host or consent kind the
// broker set from the request it decided, never by the title.
func TestCoveringFlag(t *testing.T) {
	all := Allow{Edits: true, Commands: true, MCP: []string{"tools"}, Hosts: []string{"example.com"}, WebSearch: true}
	for _, c := range []struct {
		name  string
		q     *execv1.Question
		allow Allow
		want  string
	}{
		{"mcp consent", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "mcp_server", Server: "tools"}, all, "--allow-mcp tools"},
		{"mcp tool", &execv1.Question{Kind: "mcp_tool", Server: "tools"}, all, "--allow-mcp tools"},
		{"another server", &execv1.Question{Kind: "mcp_tool", Server: "other", Title: "tools/echo"}, all, ""},
		{"host", &execv1.Question{Kind: "network", Host: "example.com"}, all, "--allow-host example.com"},
		{"another host", &execv1.Question{Kind: "network", Host: "api.example.com", Title: "example.com"}, all, ""},
		{"web search", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "web_search"}, all, "--allow-web-search"},
		{"web search, no flag", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "web_search"}, Allow{Edits: true}, ""},
		{"hook consent", &execv1.Question{Consent: true, Kind: "consent", ConsentKind: "hook", Title: "web_search"}, all, ""},
		{"a network question is not an edit", &execv1.Question{Kind: "network", Host: "other.org"}, all, ""},
		{"outside the sandbox", &execv1.Question{Kind: "command", OutsideSandbox: true}, all, ""},
	} {
		if got := coveringFlag(c.q, c.allow); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
