package policy

import (
	"strings"
	"testing"
)

func TestTeamPolicyMCPServers(t *testing.T) {
	s, err := ParsePolicy("/etc/garuda/policy.json", []byte(`{"mcp_servers": {
  "allow": ["name:github", "command:npx", "url:https://*.corp.example/*"],
  "deny": ["name:shady", "url:http://*"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	home, err := ParsePolicy("/h/policy.json", []byte(`{"mcp_servers": {"allow": ["name:github", "name:files"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		team               *Settings
		name, command, url string
		forbidden          bool
	}{
		{s, "github", "", "https://api.github.com/mcp", false},
		{s, "files", "/usr/bin/npx", "", false},
		{s, "remote", "", "https://mcp.corp.example/x", false},
		{s, "other", "python3", "", true},
		{s, "shady", "npx", "", true},                // deny wins over allow
		{s, "github", "", "http://evil.test/", true}, // so does a denied address
		{MergeTeam(s, home), "files", "npx", "", false},
		{MergeTeam(s, home), "remote", "", "https://mcp.corp.example/x", true}, // the second file does not list it
		{nil, "any", "x", "", false},
	} {
		reason, got := MCPServerForbidden(tc.team, tc.name, tc.command, tc.url)
		if got != tc.forbidden {
			t.Errorf("%s %s %s: forbidden %v (%s), want %v", tc.name, tc.command, tc.url, got, reason, tc.forbidden)
		}
	}
	if _, err := ParseSettings("/h/settings.json", []byte(`{"mcp_servers": {"deny": ["name:x"]}}`)); err == nil ||
		!strings.Contains(err.Error(), "belongs in team policy") {
		t.Errorf("a settings file may not hold mcp_servers: %v", err)
	}
	if _, err := ParsePolicy("/h/policy.json", []byte("{\"mcp_servers\": {\n\"deny\": [\"github\"]}}")); err == nil ||
		!strings.Contains(err.Error(), "line 2") {
		t.Errorf("a malformed entry: %v", err)
	}
}
