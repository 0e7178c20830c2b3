package policy

import (
	"strings"
	"testing"
)

// FuzzCommandRule decides a fuzzed command against a fuzzed bash rule, in build mode outside the sandbox (where
// nothing but a rule allows a command). Every decision is allow, ask or deny with a reason and the rule that made
// it, and deny and ask rules reach at least as far as allow rules:
//   - whatever the rule allows as a session rule, the same rule denies as a deny rule and never allows as an ask
//     rule;
//   - whatever a deny rule denies, it still denies behind a wrapper, inside sh -c, in a list, and in $(...).
func FuzzCommandRule(f *testing.F) {
	seeds := [][2]string{
		{"npm run test", "bash(npm run test *)"}, {"npm run test; rm -rf ~", "bash(npm run test *)"},
		{"npm run test $(rm -rf ~)", "bash(npm run test *)"}, {"rm -rf /", "bash(rm *)"},
		{`\r\m -rf /`, "bash(rm *)"}, {"/bin/rm -rf /", "bash(rm *)"}, {"env rm -rf /", "bash(rm *)"},
		{"sh -c 'rm -rf /'", "bash(rm *)"}, {"eval 'rm x'", "bash(rm *)"}, {"$X -rf /", "bash(rm *)"},
		{"git push --force", "bash(git push *)"}, {"git status", "bash(git status)"}, {"git status -s", "bash(git status)"},
		{"find . -exec rm {} +", "bash(rm *)"}, {"f() { curl x; }; f", "bash(curl:*)"}, {"npm run test 2>&1", "bash(npm *)"},
		{"npm run test <<EOF\n$(rm -rf ~)\nEOF", "bash(npm *)"}, {"a=b c", "bash(c)"}, {"x | sh", "bash(x)"},
		{"timeout 3 env curl x", "bash(timeout *)"}, {"curl x | sh", "bash"}, {`echo "a b" 'c'`, `bash(echo "a b" c)`},
		{"ls *.go", "bash(ls *.go)"}, {"ls a*b", "bash(ls a*b)"}, {"", "bash(x)"}, {"(", "bash(x)"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cmdText, ruleText string) {
		if !strings.HasPrefix(ruleText, "bash") {
			ruleText = "bash(" + ruleText + ")"
		}
		r, err := ParseRule(ruleText)
		if err != nil {
			return
		}
		r.Source = "fuzz"
		decide := func(c string, session, ask, deny []Rule) Decision {
			st := newState(ModeBuild)
			st.SessionRules = session
			st.User = &Settings{Name: "/u/.garuda/settings.json", Ask: ask, Deny: deny}
			d := Decide(Request{Kind: KindCommand, Tool: OpBash, Command: c, Dir: tRoot}, st)
			if d.Verdict != Allow && d.Verdict != Ask && d.Verdict != Deny || d.Reason == "" || d.Rule == "" {
				t.Fatalf("%q: decision %+v is not allow, ask or deny with a reason and a rule", c, d)
			}
			if d.Verdict == Ask && len(d.Choices) == 0 {
				t.Fatalf("%q: a question without choices: %+v", c, d)
			}
			return d
		}
		rules := []Rule{r}
		plain := decide(cmdText, nil, nil, nil)
		allowed := decide(cmdText, rules, nil, nil)
		if allowed.Verdict == Allow && plain.Verdict != Allow {
			if d := decide(cmdText, nil, nil, rules); d.Verdict != Deny {
				t.Fatalf("%q: %s allows it as a session rule but does not deny it as a deny rule: %+v", cmdText, ruleText, d)
			}
			if d := decide(cmdText, nil, rules, nil); d.Verdict == Allow {
				t.Fatalf("%q: %s as an ask rule lets it run without a question", cmdText, ruleText)
			}
		}
		if decide(cmdText, nil, nil, rules).Verdict != Deny || plain.Verdict == Deny || analyzeCommand(cmdText).opaque {
			return // (a text that does not parse is denied by every deny rule; wrapped, it may parse)
		}
		quoted := "'" + strings.ReplaceAll(cmdText, "'", `'\''`) + "'"
		wraps := []string{"env " + cmdText, "timeout 5 " + cmdText, "sh -c -- " + quoted, "env bash -c - " + quoted,
			"true; " + cmdText, "true && " + cmdText, "echo $(" + cmdText + "\n)", "(" + cmdText + "\n)"}
		if !strings.HasPrefix(cmdText, "-") { // sh -c '-x' takes -x for options, as the policy does
			wraps = append(wraps, "sh -c "+quoted, "bash -c "+quoted)
		}
		for _, wrapped := range wraps {
			if d := decide(wrapped, nil, nil, rules); d.Verdict != Deny {
				t.Fatalf("%s denies %q but not %q: %+v", ruleText, cmdText, wrapped, d)
			}
		}
	})
}
