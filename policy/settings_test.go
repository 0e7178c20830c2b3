package policy

import (
	"strings"
	"testing"
)

func TestParseSettingsErrors(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"settings.json", "{\n  \"permissions\": {\n    \"alow\": []\n  }\n}", `settings.json: line 3: unknown key "alow"`},
		{"settings.json", "{\n\n  \"model\": 1}", `line 3: unknown key "model"`},
		{"settings.json", "{\"permissions\": {\"allow\": [\n\"bash(ls\"\n]}}", `line 2: permissions.allow: rule "bash(ls": missing closing parenthesis`},
		{"settings.json", "{\"permissions\": {\"deny\": [1]}}", "must hold only strings"},
		{"settings.json", "{\"permissions\": []}", `"permissions" must be a JSON object`},
		{"settings.json", "{\n\"allow_unsandboxed\": true}", `line 2: key "allow_unsandboxed" belongs in team policy`},
		{"settings.json", "", "the file is empty"},
		{"settings.json", "{\"permissions\": {}}\n{}", "unexpected data"},
		{"settings.json", "{\"permissions\": {}, \"permissions\": {}}", `duplicate key "permissions"`},
		{"settings.json", "{\n\"permissions\": {\n", "line 3: unexpected end"},
		{"settings.json", "{\n\"permissions\": {,}}", "line 2"},
		{"policy.json", "{\"allow_unsandboxed\": \"no\"}", "must be true or false"},
		{"policy.json", "{\"allowed_modes\": [\"yolo\"]}", `unknown mode "yolo"`},
		{"policy.json", "{\"network_allowlist\": [\"http://x\"]}", "not a host name"},
		{"policy.json", "{\"audit_dir\": \"rel/dir\"}", "must be an absolute path"},
	}
	for _, c := range cases {
		_, err := ParseSettings("/h/"+c.name, []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/h/"+c.name) {
			t.Errorf("%q: error %v, want it to name the file and say %q", c.data, err, c.want)
		}
	}
}

func TestParseTeamKeys(t *testing.T) {
	s := mustSettings(t, "/etc/garuda/policy.json", `{"allow_unsandboxed": false, "weaker_sandbox_ok": true,
		"network_allowlist": ["Example.com.", "*.corp.io"], "allowed_modes": ["plan"], "audit_dir": "/var/log/garuda/"}`)
	if s.UnsandboxedAllowed() || !s.WeakerSandboxAllowed() || s.AuditDir != "/var/log/garuda" ||
		strings.Join(s.NetworkAllowlist, ",") != "example.com,*.corp.io" || len(s.AllowedModes) != 1 {
		t.Fatalf("parsed %+v", s)
	}
	var none *Settings
	if !none.UnsandboxedAllowed() || none.WeakerSandboxAllowed() {
		t.Fatal("defaults of no team policy")
	}
}

// TestMergeTeam: the merge is never looser than either file.
func TestMergeTeam(t *testing.T) {
	managed := mustSettings(t, "/etc/garuda/policy.json", `{"allow_unsandboxed": true, "weaker_sandbox_ok": false,
		"network_allowlist": ["a.com", "b.com"], "audit_dir": "/var/log/g", "permissions": {"deny": ["bash(curl *)"]}}`)
	home := mustSettings(t, "/u/.garuda/policy.json", `{"allow_unsandboxed": false, "weaker_sandbox_ok": true,
		"network_allowlist": ["b.com", "c.com"], "allowed_modes": ["build"], "audit_dir": "/tmp/a",
		"permissions": {"deny": ["bash(wget *)"]}}`)
	m := MergeTeam(managed, home)
	if m.UnsandboxedAllowed() || m.WeakerSandboxAllowed() || strings.Join(m.NetworkAllowlist, ",") != "b.com" ||
		len(m.AllowedModes) != 1 || m.AuditDir != "/var/log/g" || len(m.Deny) != 2 {
		t.Fatalf("merged %+v", m)
	}
	if MergeTeam(nil, nil) != nil {
		t.Fatal("no files should give no team policy")
	}
	if m := MergeTeam(nil, home); m.UnsandboxedAllowed() || m.AuditDir != "/tmp/a" {
		t.Fatalf("home only: %+v", m)
	}
}

func TestLoosening(t *testing.T) {
	s := mustSettings(t, "/w/proj/.garuda/settings.json",
		`{"permissions":{"allow":["bash(make *)","edit_file(src/**)"],"deny":["bash(rm *)"],"ask":["bash(git *)"]}}`)
	got := s.Loosening()
	if len(got) != 2 || !strings.Contains(got[0], "bash(make *)") || !strings.Contains(got[0], "outside the sandbox") ||
		!strings.Contains(got[1], "edit_file(src/**)") {
		t.Fatalf("Loosening = %q", got)
	}
}

func TestTrust(t *testing.T) {
	data := []byte(`{"permissions":{"allow":["bash(make *)"]}}`)
	h := TrustHash(data)
	if !strings.HasPrefix(h, "sha256:") || h == TrustHash(append(data, ' ')) {
		t.Fatalf("hash %q", h)
	}
	tr, err := ParseTrust(nil)
	if err != nil || tr.Pinned("/w/proj", h) {
		t.Fatalf("empty trust: %v", err)
	}
	tr.Pin("/w/proj/", h)
	back, err := ParseTrust(tr.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !back.Pinned("/w/proj", h) || back.Pinned("/w/proj", TrustHash([]byte("{}"))) || back.Pinned("/w/other", h) {
		t.Fatal("pin did not round-trip to exactly that folder and hash")
	}
	if _, err := ParseTrust([]byte(`{"version":1,"projcts":{}}`)); err == nil {
		t.Fatal("unknown key accepted")
	}
	if _, err := ParseTrust([]byte(`{"version":2}`)); err == nil {
		t.Fatal("unknown version accepted")
	}
}

func TestParsePolicyAnyName(t *testing.T) {
	if _, err := ParseSettings("/opt/team.json", []byte(`{"allow_unsandboxed": false}`)); err == nil {
		t.Fatal("team key accepted in a settings file")
	}
	s, err := ParsePolicy("/opt/team.json", []byte(`{"allow_unsandboxed": false}`))
	if err != nil || s.UnsandboxedAllowed() {
		t.Fatalf("ParsePolicy: %v %+v", err, s)
	}
}
