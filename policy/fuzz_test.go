package policy

import (
	"strings"
	"testing"
)

var fuzzKinds = []Kind{KindRead, KindWrite, KindEdit, KindSearch, KindCommand, KindNetwork, KindMCPTool, KindConsent}

// FuzzDecide checks that Decide never panics, always explains itself, and that no user rule, trusted project
// rule or session rule turns a team-policy deny into allow or ask, nor a team-policy ask into allow.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(4), "/w/proj/a", "curl x | sh", false, false, "bash\nbash(curl *)", true, "")
	f.Add(uint8(4), "/w/proj", "timeout 3 env curl x", true, false, "bash(timeout *)", true, "bash(wget *)")
	f.Add(uint8(0), "/srv/keys/a", "", false, false, "read_file(//**)\nRead(//srv/keys)", true, "")
	f.Add(uint8(2), "/w/proj/.git/hooks/x", "", false, true, "edit_file(**)", true, "edit_file(.git)")
	f.Add(uint8(5), "evil.io", "", false, false, "web_fetch(domain:evil.io)", true, "")
	f.Add(uint8(6), "", "shady__run", false, false, "mcp__shady", true, "")
	f.Add(uint8(7), "mcp_server", "shady", false, false, "mcp__shady", false, "")
	f.Add(uint8(4), "/w/proj", "git push --force", false, false, "bash(git *)\nbash(git push *)", true, "bash(git push *)")
	f.Add(uint8(4), "/w/proj", "sh -c \"$(echo curl) x\"", false, false, "bash(sh *)", true, "")
	f.Fuzz(func(t *testing.T, kind uint8, p, command string, sandboxed, plan bool, rules string, trusted bool, teamRule string) {
		team := &Settings{Name: "/etc/garuda/policy.json", NetworkAllowlist: []string{"*.example.com", "evil.io"}}
		for _, text := range []string{"bash(curl *)", "read_file(//srv/keys/**)", "edit_file(locked/**)",
			"web_fetch(domain:evil.io)", "mcp__shady", "bash(rm -rf *)"} {
			r, err := ParseRule(text)
			if err != nil {
				t.Fatal(err)
			}
			r.Source = team.Name
			team.Deny = append(team.Deny, r)
		}
		if r, err := ParseRule(teamRule); err == nil {
			r.Source = team.Name
			team.Ask = append(team.Ask, r)
		}
		off := false
		if kind&0x80 != 0 {
			team.AllowUnsandboxed = &off
		}
		var loose []Rule
		for _, line := range strings.Split(rules, "\n") {
			if r, err := ParseRule(line); err == nil {
				r.Source = "fuzz"
				loose = append(loose, r)
			}
		}
		mode := ModeBuild
		if plan {
			mode = ModePlan
		}
		req := Request{Kind: fuzzKinds[int(kind&0x7f)%len(fuzzKinds)], Path: p, Command: command, Sandboxed: sandboxed,
			Dir: "/w/proj", Host: p, Tool: "mcp__" + command, ConsentKind: p, ConsentName: command}
		base := State{Root: "/w/proj", Home: "/u/.garuda", UserHome: "/u", Mode: mode, Team: team}
		teamOnly := Decide(req, &base)

		full := base
		full.User = &Settings{Name: "/u/.garuda/settings.json", Allow: loose}
		full.Project = &Settings{Name: "/w/proj/.garuda/settings.json", Allow: loose}
		full.ProjectTrusted = trusted
		full.SessionRules = loose
		got := Decide(req, &full)

		if got.Reason == "" || got.Rule == "" {
			t.Fatalf("decision without reason or rule: %+v", got)
		}
		if teamOnly.Verdict == Deny && got.Verdict != Deny {
			t.Fatalf("%+v: denied by %q (%s) without the rules, %v with them (%s)", req, teamOnly.Rule, teamOnly.Reason, got.Verdict, got.Reason)
		}
		if teamOnly.Verdict == Ask && teamOnly.Rule == "team policy" && got.Verdict == Allow {
			t.Fatalf("%+v: team ask became allow by %s", req, got.Rule)
		}
	})
}

// TestFuzzPropertyCanFail is the fuzz test's negative control: without the team policy the same session
// rule does allow the command, so the fuzz assertion is not vacuous.
func TestFuzzPropertyCanFail(t *testing.T) {
	req := Request{Kind: KindCommand, Command: "curl x", Sandboxed: false, Dir: "/w/proj"}
	r, _ := ParseRule("bash(curl *)")
	st := State{Root: "/w/proj", Home: "/u/.garuda", Mode: ModeBuild, SessionRules: []Rule{r}}
	if d := Decide(req, &st); d.Verdict != Allow {
		t.Fatalf("without team policy the session rule should allow: %v", d.Verdict)
	}
	team, _ := ParseSettings("/etc/garuda/policy.json", []byte(`{"permissions":{"deny":["bash(curl *)"]}}`))
	st.Team = team
	if d := Decide(req, &st); d.Verdict != Deny {
		t.Fatalf("with team policy: %v", d.Verdict)
	}
}
