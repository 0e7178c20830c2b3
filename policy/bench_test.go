package policy

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecide decides a 20-word compound command outside the sandbox against 200 rules, with the rules
// that allow it last in the list (the slowest path: every deny and ask rule is tried, then every allow).
func BenchmarkDecide(b *testing.B) {
	var allow, ask, deny []string
	for i := 0; i < 140; i++ {
		allow = append(allow, fmt.Sprintf("bash(tool%d sub%d *)", i, i))
	}
	for i := 0; i < 20; i++ {
		deny = append(deny, fmt.Sprintf("bash(danger%d *)", i), fmt.Sprintf("read_file(secret%d/**)", i))
	}
	for i := 0; i < 20; i++ {
		ask = append(ask, fmt.Sprintf("bash(git push%d *)", i))
	}
	allow = append(allow[:len(allow)-4], "bash(git status *)", "bash(go build *)", "bash(go test *)", "bash(grep *)")
	js := func(xs []string) string {
		if len(xs) == 0 {
			return "[]"
		}
		return `["` + strings.Join(xs, `","`) + `"]`
	}
	data := fmt.Sprintf(`{"permissions":{"allow":%s,"ask":%s,"deny":%s}}`, js(allow), js(ask), js(deny))
	user, err := ParseSettings("/u/.garuda/settings.json", []byte(data))
	if err != nil {
		b.Fatal(err)
	}
	if n := len(user.Allow) + len(user.Ask) + len(user.Deny); n != 200 {
		b.Fatalf("%d rules", n)
	}
	st := &State{Root: "/w/proj", Home: "/u/.garuda", UserHome: "/u", Mode: ModeBuild, User: user}
	cmd := "git status --short && go build ./... && go test -count=1 -run TestX -v ./pkg/... 2>&1 | grep -v ok"
	if n := len(strings.Fields(cmd)); n != 20 {
		b.Fatalf("%d words", n)
	}
	req := Request{Kind: KindCommand, Tool: "bash", Command: cmd, Dir: "/w/proj"}
	if d := Decide(req, st); d.Verdict != Allow {
		b.Fatalf("%v: %s", d.Verdict, d.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		Decide(req, st)
	}
}
