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
		{"settings.json", "{\"permissions\": {}}\n{}", "line 2: invalid JSON: more text after the end"},
		{"settings.json", "{\"permissions\": {}, \"permissions\": {}}", `duplicate key "permissions"`},
		{"settings.json", "{\n\"permissions\": {\n", "line 3: invalid JSON: the file ends too early"},
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

// TestCommandLimits: each limit is the tightest that team policy (both files) and the user's settings set; a
// limit no file sets stays unset, and a project's settings set none.
func TestCommandLimits(t *testing.T) {
	managed := mustSettings(t, "/etc/garuda/policy.json", `{"limits": {"memory_mb": 8192}}`)
	home := mustSettings(t, "/u/.garuda/policy.json", `{"limits": {"memory_mb": 4096, "processes": 2000}}`)
	user := mustSettings(t, "/u/.garuda/settings.json", `{"limits": {"memory_mb": 6000, "processes": 500}}`)
	project := mustSettings(t, "/p/.garuda/settings.json", `{"limits": {"memory_mb": 16}}`)
	st := &State{Team: MergeTeam(managed, home), User: user, Project: project}
	if got := CommandLimits(st); got != (Limits{MemoryMB: 4096, Processes: 500}) {
		t.Errorf("tightest of team and user: %+v", got)
	}
	if got := MergeTeam(managed, nil).Limits; got != (Limits{MemoryMB: 8192}) {
		t.Errorf("one team file: %+v", got)
	}
	if got := CommandLimits(&State{User: user}); got != user.Limits {
		t.Errorf("no team policy: %+v", got)
	}
	// Negative control: a looser user setting does not raise the team's limit.
	loose := mustSettings(t, "/u/.garuda/settings.json", `{"limits": {"memory_mb": 65536}}`)
	if got := CommandLimits(&State{Team: MergeTeam(managed, nil), User: loose}); got.MemoryMB != 8192 {
		t.Errorf("a looser user setting: %+v", got)
	}
	if got := CommandLimits(&State{Project: project}); got != (Limits{}) {
		t.Errorf("a project's limits: %+v", got)
	}
	for _, bad := range []string{`{"limits": {"memory_mb": 0}}`, `{"limits": {"memory_mb": -1}}`, `{"limits": {"memory_mb": 1.5}}`,
		`{"limits": {"memory_mb": "1024"}}`, `{"limits": {"processes": true}}`, `{"limits": {"memory_mb": 9007199254740993}}`,
		`{"limits": {"cpu": 1}}`, `{"limits": []}`} {
		if _, err := ParseSettings("/u/.garuda/settings.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "limits") {
			t.Errorf("%s: error %v, want one about limits", bad, err)
		}
	}
}
