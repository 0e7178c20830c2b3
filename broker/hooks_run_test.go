package broker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testproc"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/nobody"
)

// denyRmRf is the classic PreToolUse hook: it reads the call from stdin and blocks rm -rf with exit 2.
const denyRmRf = `in=$(cat)
if [[ "$in" == *'"tool_name":"Bash"'* && "$in" == *'rm -rf'* ]]; then echo "rm -rf is not allowed here" >&2; exit 2; fi
exit 0`

// A PreToolUse hook that exits 2 ends the bash call failed with the hook's stderr as the reason, and the command
// does not run; the script lives in $GARUDA_HOME/hooks/, which hooks see though the rest of GARUDA_HOME is hidden.
// Control: a command the hook lets through runs.
func TestHookPreToolUseBlocksWithExit2(t *testing.T) {
	e := brokertest.New(t)
	e.Settings(t, brokertest.HooksJSON("PreToolUse", "Bash", e.Script(t, "deny.sh", denyRmRf), ""))
	os.WriteFile(filepath.Join(e.Root, "keep"), []byte("x"), 0o644)
	c := e.Client()
	sid := e.Open(c)
	cx := brokertest.Ctx(t)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Bash("rm -rf keep")), execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != execv1.Status_STATUS_FAILED || !strings.Contains(res.Content, "rm -rf is not allowed here") || len(qs) != 0 {
		t.Fatalf("blocked call: %v %q, %d questions", res.Status, res.Content, len(qs))
	}
	if !brokertest.Exists(filepath.Join(e.Root, "keep")) {
		t.Fatal("the blocked command ran")
	}
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Bash("echo allowed")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.Status != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.Content, "allowed") {
		t.Fatalf("control: %v %v", res, err)
	}
	var hooks int
	for _, r := range brokertest.AuditRecords(t, e.Home) {
		if r.Event == "hook" && r.Detail["event"] == "PreToolUse" {
			hooks++
			if r.ExitCode == nil || (*r.ExitCode != 2 && *r.ExitCode != 0) {
				t.Errorf("hook record without its exit code: %+v", r)
			}
		}
	}
	if hooks != 2 {
		t.Errorf("%d hook runs audited, want 2", hooks)
	}
}

// The JSON form: permissionDecision deny blocks with its reason; allow answers a question the user's own ask rule
// would have asked, but never one team policy asks (nor, see policy.HookMayAllow, a protected path's). Control:
// without the hook, the user's ask rule asks.
func TestHookJSONDecisions(t *testing.T) {
	e := brokertest.New(t)
	allow := e.Script(t, "allow.sh", `cat >/dev/null; echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "ok by hook"}}'`)
	deny := e.Script(t, "deny.sh", `cat >/dev/null; echo '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no curl"}}'`)
	e.Settings(t, `{"permissions": {"ask": ["Bash(echo asked)"]}, "hooks": {"PreToolUse": [
		{"matcher": "Bash", "hooks": [{"type": "command", "command": "`+allow+`"}]},
		{"matcher": "bash", "hooks": [{"type": "command", "command": "if grep -q curl; then `+deny+`; fi"}]}]}}`)

	c := e.Client()
	sid := e.Open(c)
	cx := brokertest.Ctx(t)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Bash("echo asked")), execv1.Choice_CHOICE_DENY)
	if err != nil || res.Status != execv1.Status_STATUS_COMPLETED || len(qs) != 0 {
		t.Fatalf("a hook's allow: %v %q, %d questions, %v", res.GetStatus(), res.GetContent(), len(qs), err)
	}
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Bash("echo curl")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.Status != execv1.Status_STATUS_FAILED || !strings.Contains(res.Content, "no curl") {
		t.Fatalf("a hook's deny: %v %v", res, err)
	}

	// Team policy asks: the hook's allow does not answer for the user.
	e.Team(t, `{"permissions": {"ask": ["Bash(echo asked)"]}}`)
	sid = e.Open(c)
	_, qs, err = brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Bash("echo asked")), execv1.Choice_CHOICE_DENY)
	if err != nil || len(qs) != 1 {
		t.Fatalf("team ask under a hook's allow: %d questions, %v", len(qs), err)
	}

	// Control: no hooks, the user's ask rule asks.
	os.Remove(filepath.Join(e.Home, "policy.json"))
	e.Settings(t, `{"permissions": {"ask": ["Bash(echo asked)"]}}`)
	sid = e.Open(c)
	_, qs, err = brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Bash("echo asked")), execv1.Choice_CHOICE_DENY)
	if err != nil || len(qs) != 1 {
		t.Fatalf("control: %d questions, %v", len(qs), err)
	}
}

// A hook's "ask" asks even where the policy allows; PostToolUse gets the tool's input and result, runs in the
// project (gofmt-style hooks change files there), and its additionalContext reaches the model.
func TestHookAskAndPostToolUse(t *testing.T) {
	e := brokertest.New(t)
	ask := e.Script(t, "ask.sh", `cat >/dev/null; echo '{"permissionDecision": "ask", "reason": "check this"}'`)
	post := e.Script(t, "post.sh", `cat > "$CLAUDE_PROJECT_DIR/post.json"; [ "$GARUDA_PROJECT_DIR" = "$CLAUDE_PROJECT_DIR" ] || exit 1
echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "formatted by the hook"}}'`)

	e.Settings(t, `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "`+ask+`"}]}],
		"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "`+post+`"}]}]}}`)

	c := e.Client()
	sid := e.Open(c)
	cx := brokertest.Ctx(t)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Bash("echo hi")), execv1.Choice_CHOICE_ONCE)
	if err != nil || len(qs) != 1 || !strings.Contains(qs[0].Preview, "check this") || res.Status != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("a hook's ask: %d questions, %v, %v", len(qs), res, err)
	}
	target := filepath.Join(e.Root, "a.go")
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.Write(target, "package a\n")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.Status != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.Content, "formatted by the hook") {
		t.Fatalf("write under PostToolUse: %v %v", res, err)
	}
	data, err := os.ReadFile(filepath.Join(e.Root, "post.json"))
	if err != nil {
		t.Fatal("the PostToolUse hook did not run in the project")
	}
	var in struct {
		Event    string         `json:"hook_event_name"`
		Tool     string         `json:"tool_name"`
		Input    map[string]any `json:"tool_input"`
		Response map[string]any `json:"tool_response"`
		Cwd      string         `json:"cwd"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatalf("the hook's input is not JSON: %v\n%s", err, data)
	}
	if in.Event != "PostToolUse" || in.Tool != "Write" || in.Input["file_path"] != target || in.Response == nil || in.Cwd != e.Root {
		t.Fatalf("the hook's input: %s", data)
	}
}

// UserPromptSubmit through hook_event: plain stdout is context for the model; exit 2 blocks the prompt with the
// reason. An event with no hooks runs nothing and records nothing.
func TestHookUserPromptSubmit(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	cx := brokertest.Ctx(t)
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.HookEvent("UserPromptSubmit", "hello", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetHook() == nil || res.GetHook().GetRan() != 0 || len(brokertest.AuditRecords(t, e.Home)) != 0 {
		t.Fatalf("no hooks: %v %v, %d records", res, err, len(brokertest.AuditRecords(t, e.Home)))
	}
	sc := e.Script(t, "prompt.sh", `p=$(cat); if [[ "$p" == *secret* ]]; then echo "no secrets in prompts" >&2; exit 2; fi; echo "branch: main"`)
	e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", sc, ""))
	sid = e.Open(c)
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.HookEvent("UserPromptSubmit", "hello", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetHook().GetBlocked() || res.GetHook().GetContext() != "branch: main" {
		t.Fatalf("context: %v %v", res, err)
	}
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.HookEvent("UserPromptSubmit", "the secret is", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || !res.GetHook().GetBlocked() || res.GetHook().GetReason() != "no secrets in prompts" {
		t.Fatalf("block: %v %v", res, err)
	}
}

// Every front-end event runs its hooks with the documented input, and SessionStart's stdout is context; JSON
// "continue": false stops with its reason.
func TestHookFrontEndEvents(t *testing.T) {
	e := brokertest.New(t)
	log := filepath.Join(e.Root, "events.log")
	sc := e.Script(t, "log.sh", `cat >> "$CLAUDE_PROJECT_DIR/events.log"; echo >> "$CLAUDE_PROJECT_DIR/events.log"; echo started`)
	stop := e.Script(t, "stop.sh", `cat >/dev/null; echo '{"continue": false, "stopReason": "enough for today"}'`)
	var entries []string
	for _, ev := range []string{"SessionStart", "SessionEnd", "PreCompact", "Notification"} {
		entries = append(entries, fmt.Sprintf(`%q: [{"hooks": [{"type": "command", "command": %q}]}]`, ev, sc))
	}
	entries = append(entries, fmt.Sprintf(`"Stop": [{"hooks": [{"type": "command", "command": %q}]}]`, stop))
	e.Settings(t, `{"hooks": {`+strings.Join(entries, ",")+`}}`)
	c := e.Client()
	sid := e.Open(c)
	cx := brokertest.Ctx(t)
	for _, ev := range []struct{ event, subject string }{{"SessionStart", "startup"}, {"PreCompact", "auto"},
		{"Notification", "permission_prompt"}, {"SessionEnd", "other"}} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.HookEvent(ev.event, "", ev.subject)),
			execv1.Choice_CHOICE_ONCE)
		if err != nil || res.GetHook().GetRan() != 1 {
			t.Fatalf("%s: %v %v", ev.event, res, err)
		}
		if ev.event == "SessionStart" && res.GetHook().GetContext() != "started" {
			t.Errorf("SessionStart's stdout is not context: %q", res.GetHook().GetContext())
		}
	}
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.HookEvent("Stop", "", "")), execv1.Choice_CHOICE_ONCE)
	if err != nil || !res.GetHook().GetStop() || res.GetHook().GetStopReason() != "enough for today" {
		t.Fatalf("Stop: %v %v", res, err)
	}
	data, _ := os.ReadFile(log)
	for _, want := range []string{`"hook_event_name":"SessionStart"`, `"source":"startup"`, `"trigger":"auto"`, `"hook_event_name":"Notification"`,
		`"reason":"other"`, `"session_id":"` + sid + `"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the hooks' input lacks %s:\n%s", want, data)
		}
	}
	if _, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.HookEvent("PreToolUse", "", "")),
		execv1.Choice_CHOICE_ONCE); err == nil {
		t.Error("the front end could report a tool event of its own")
	}
}

// Team hooks run first and their deny stands whatever the user's hooks say; a team hook that fails with
// fail_closed blocks. Control: the same failing hook without fail_closed only gives a notice.
func TestHookTeamPrecedenceAndFailClosed(t *testing.T) {
	e := brokertest.New(t)
	allow := e.Script(t, "allow.sh", `cat >/dev/null; echo '{"permissionDecision": "allow"}'`)
	e.Settings(t, brokertest.HooksJSON("PreToolUse", "*", allow, ""))
	e.Team(t, brokertest.HooksJSON("PreToolUse", "Bash", "echo 'team says no' >&2; exit 2", ""))
	c := e.Client()
	cx := brokertest.Ctx(t)
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.Bash("echo hi")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.Status != execv1.Status_STATUS_FAILED || !strings.Contains(res.Content, "team says no") {
		t.Fatalf("team deny under a user allow: %v %v", res, err)
	}

	e.Team(t, brokertest.HooksJSON("PreToolUse", "Bash", "exit 7", `, "fail_closed": true`))
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.Bash("echo hi")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.Status != execv1.Status_STATUS_FAILED || !strings.Contains(res.Content, "team policy blocks the action") {
		t.Fatalf("fail_closed: %v %v", res, err)
	}
	e.Team(t, brokertest.HooksJSON("PreToolUse", "Bash", "exit 7", `, "fail_closed": true, "timeout": 1`)) // (same hook, still closed)
	e.Team(t, brokertest.HooksJSON("PreToolUse", "Bash", "sleep 30", `, "fail_closed": true, "timeout": 1`))
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.Bash("echo hi")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.Status != execv1.Status_STATUS_FAILED || !strings.Contains(res.Content, "timed out") {
		t.Fatalf("fail_closed on a timeout: %v %v", res, err)
	}

	e.Team(t, brokertest.HooksJSON("PreToolUse", "Bash", "exit 7", ""))
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.Bash("echo hi")), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.Status != execv1.Status_STATUS_COMPLETED || !slices.ContainsFunc(res.Notices, func(n string) bool {
		return strings.HasPrefix(n, "Garuda: ") && strings.Contains(n, "exit code 7")
	}) {
		t.Fatalf("control: %v %v", res, err)
	}
}

// A project's hooks (.claude/settings.json, only its hooks read) run only after a consent question, pinned by the
// hash of their definitions: a no keeps them off for the session; a yes is remembered; a changed definition asks
// again. Control: the user's own hooks need no consent.
func TestHookProjectConsent(t *testing.T) {
	e := brokertest.New(t)
	os.MkdirAll(filepath.Join(e.Root, ".claude", "hooks"), 0o755)
	os.WriteFile(filepath.Join(e.Root, ".claude", "hooks", "p.sh"), []byte("#!/bin/bash\ncat >/dev/null; echo project-ran\n"), 0o755)
	claude := func(cmd string) {
		os.WriteFile(filepath.Join(e.Root, ".claude", "settings.json"), []byte(`{"model": "opus", "env": {"X": "1"},
			"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "`+cmd+`"}]}]}}`), 0o644)
	}
	claude(`\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/p.sh`)
	c := e.Client()
	cx := brokertest.Ctx(t)
	prompt := func(sid string, ch execv1.Choice) (*execv1.Result, []*execv1.Question) {
		t.Helper()
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, brokertest.HookEvent("UserPromptSubmit", "hi", "")), ch)
		if err != nil {
			t.Fatal(err)
		}
		return res, qs
	}
	sid := e.Open(c)
	res, qs := prompt(sid, execv1.Choice_CHOICE_DENY)
	if len(qs) != 1 || !qs[0].Consent || !strings.Contains(qs[0].Preview, "p.sh") || res.GetHook().GetRan() != 0 {
		t.Fatalf("first event: %d questions, %v", len(qs), res)
	}
	if res, qs = prompt(sid, execv1.Choice_CHOICE_ONCE); len(qs) != 0 || res.GetHook().GetRan() != 0 {
		t.Fatalf("after a no: %d questions, ran %d", len(qs), res.GetHook().GetRan())
	}
	sid = e.Open(c)
	if res, qs = prompt(sid, execv1.Choice_CHOICE_ONCE); len(qs) != 1 || res.GetHook().GetContext() != "project-ran" {
		t.Fatalf("a yes: %d questions, %v", len(qs), res)
	}
	if res, qs = prompt(e.Open(c), execv1.Choice_CHOICE_DENY); len(qs) != 0 || res.GetHook().GetContext() != "project-ran" {
		t.Fatalf("remembered: %d questions, %v", len(qs), res)
	}
	claude(`echo changed`)
	if _, qs = prompt(e.Open(c), execv1.Choice_CHOICE_DENY); len(qs) != 1 {
		t.Fatalf("a changed definition: %d questions", len(qs))
	}
	// Control: the user's hooks run at once.
	os.RemoveAll(filepath.Join(e.Root, ".claude"))
	e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", "echo user-ran", ""))
	if res, qs = prompt(e.Open(c), execv1.Choice_CHOICE_DENY); len(qs) != 0 || res.GetHook().GetContext() != "user-ran" {
		t.Fatalf("user hooks: %d questions, %v", len(qs), res)
	}
}

// Bad hooks: one that hangs is killed at its timeout, one that floods is bounded, invalid JSON is plain output, a
// daemon it forks dies with it, one that is not executable gives a clear notice; the turn goes on each time.
func TestHookBadHooks(t *testing.T) {
	e := brokertest.New(t)
	noexec := filepath.Join(e.Home, "hooks", "noexec.sh")
	e.Script(t, "noexec.sh", "exit 0")
	os.Chmod(noexec, 0o644)
	cases := []struct {
		name, command, extra, notice string
	}{
		{"hangs", "sleep 60", `, "timeout": 1`, "timed out after 1s"},
		{"not executable", noexec, "", "exit code 126"},
	}
	c := e.Client()
	cx := brokertest.Ctx(t)
	for _, tc := range cases {
		e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", tc.command, tc.extra))
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.HookEvent("UserPromptSubmit", "hi", "")),
			execv1.Choice_CHOICE_ONCE)
		if err != nil || res.GetHook().GetBlocked() || !slices.ContainsFunc(res.Notices, func(n string) bool {
			return strings.HasPrefix(n, "Garuda: ") && strings.Contains(n, tc.notice)
		}) {
			t.Errorf("%s: %v %v", tc.name, res, err)
		}
	}
	// A flood of stdout and stderr: bounded, and the hook is not blocked writing it.
	e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", "head -c 20000000 /dev/zero | tr '\\0' x; head -c 20000000 /dev/zero >&2", ""))
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.HookEvent("UserPromptSubmit", "hi", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || len(res.GetHook().GetContext()) > 64<<10 || len(res.GetHook().GetContext()) == 0 {
		t.Fatalf("flood: %d bytes of context, %v", len(res.GetHook().GetContext()), err)
	}
	// Invalid JSON is plain output.
	e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", `echo '{"decision": "block", oops'`, ""))
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.HookEvent("UserPromptSubmit", "hi", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetHook().GetBlocked() || !strings.Contains(res.GetHook().GetContext(), "oops") {
		t.Fatalf("invalid JSON: %v %v", res, err)
	}
	// A daemon: killed with the hook's pid namespace.
	e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", "setsid sleep 3147 </dev/null >/dev/null 2>&1 & (sleep 3147 &) ; echo bye", ""))
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.HookEvent("UserPromptSubmit", "hi", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetHook().GetContext() != "bye" {
		t.Fatalf("daemon: %v %v", res, err)
	}
	if left := testproc.Holding("sleep 3147"); len(left) > 0 {
		t.Fatalf("the hook's daemons outlived it: %v", left)
	}
}

// A hook runs in the command sandbox: GARUDA_HOME's secrets are hidden (its hooks/ folder is not), nothing outside
// the project is writable. Control: the files exist on the host.
func TestHookSandboxed(t *testing.T) {
	e := brokertest.New(t)
	os.WriteFile(filepath.Join(e.Home, "credentials"), []byte("sk-secret"), 0o644) // readable by anyone: only the hiding keeps it from a hook
	os.MkdirAll(filepath.Join(e.Home, "hooks"), 0o755)
	os.WriteFile(filepath.Join(e.Home, "hooks", "lib.sh"), []byte("echo from-lib"), 0o644)
	outside := filepath.Join(filepath.Dir(e.Root), "outside")
	probe := e.Script(t, "probe.sh", fmt.Sprintf(`cat >/dev/null; source %s/hooks/lib.sh; cat %s/credentials 2>&1 | head -c 100; echo; touch %s 2>&1 | head -c 0; echo done`,
		e.Home, e.Home, outside))

	e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", probe, ""))
	c := e.Client()
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), e.Open(c), brokertest.HookEvent("UserPromptSubmit", "hi", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil {
		t.Fatal(err)
	}
	out := res.GetHook().GetContext()
	if strings.Contains(out, "sk-secret") || brokertest.Exists(outside) || !strings.Contains(out, "from-lib") ||
		!strings.Contains(out, "done") {
		t.Fatalf("the hook saw or wrote outside the sandbox: %q (outside written: %v)", out, brokertest.Exists(outside))
	}
	if data, _ := os.ReadFile(filepath.Join(e.Home, "credentials")); string(data) != "sk-secret" {
		t.Fatal("control: the secret is not on the host")
	}
}

// TestHookAsNobody reruns the hook tests that prove sandbox properties as the unprivileged user nobody.
func TestHookAsNobody(t *testing.T) {
	nobody.Rerun(t, "^TestHook(Sandboxed|BadHooks|PreToolUseBlocksWithExit2|DoesNotSeeWhatTheBrokerWritesDuringItsRun)$", "TestHookSandboxed")
}

// Nothing written in $GARUDA_HOME while a hook runs is seen by it: neither a session file in a folder made during
// the run nor a file that appears at the top of $GARUDA_HOME (credentials `garuda setup` writes then): the sandbox
// hides the folder whole and binds hooks/ back. The hook waits until the test has written them, then tries to read
// them. Control: a file written in the project at the same moment is read, so the hook did look in time; the
// entry-by-entry cover hooks had before shows the top-level file (TestAttackHiddenFolderGrowsDuringTheRun
// [broker/sandbox], and this test fails on it).
func TestHookDoesNotSeeWhatTheBrokerWritesDuringItsRun(t *testing.T) {
	e := brokertest.New(t)
	probe := e.Script(t, "late.sh", fmt.Sprintf(`cat >/dev/null; touch "$CLAUDE_PROJECT_DIR/started"
for i in $(seq 200); do [ -s "$CLAUDE_PROJECT_DIR/written" ] && break; sleep 0.05; done
cat %[1]s/sessions/late.jsonl %[1]s/late-top.txt "$CLAUDE_PROJECT_DIR/written" 2>/dev/null; exit 0`, e.Home))

	e.Settings(t, brokertest.HooksJSON("UserPromptSubmit", "", probe, ""))
	c := e.Client()
	sid := e.Open(c)
	os.RemoveAll(filepath.Join(e.Home, "sessions"))
	done := make(chan *execv1.Result, 1)
	go func() {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.HookEvent("UserPromptSubmit", "hi", "")),
			execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for i := 0; !brokertest.Exists(filepath.Join(e.Root, "started")); i++ {
		if i > 2000 {
			t.Fatal("the hook never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.MkdirAll(filepath.Join(e.Home, "sessions"), 0o700)
	os.WriteFile(filepath.Join(e.Home, "sessions", "late.jsonl"), []byte("conversation-secret\n"), 0o644)
	os.WriteFile(filepath.Join(e.Home, "late-top.txt"), []byte("top-level-file\n"), 0o644)
	os.WriteFile(filepath.Join(e.Root, "written"), []byte("written-in-time\n"), 0o644)
	res := <-done
	out := res.GetHook().GetContext()
	if strings.Contains(out, "conversation-secret") || strings.Contains(out, "top-level-file") {
		t.Fatalf("the hook read what was written in GARUDA_HOME during its run: %q", out)
	}
	if !strings.Contains(out, "written-in-time") {
		t.Fatalf("control: the hook did not read the project's file written at the same moment: %q %v", out, res.Notices)
	}
}

// A team policy that cannot be read blocks prompts, as it refuses every action: its hooks may be what guards them.
// Control: with the file fixed, the prompt goes on.
func TestHookUnreadableTeamPolicyBlocksPrompts(t *testing.T) {
	e := brokertest.New(t)
	e.Team(t, `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}`) // one brace short
	c := e.Client()
	cx := brokertest.Ctx(t)
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.HookEvent("UserPromptSubmit", "hi", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || !res.GetHook().GetBlocked() || !strings.Contains(res.GetHook().GetReason(), "team policy could not be read") {
		t.Fatalf("unreadable team policy: %v %v", res, err)
	}
	e.Team(t, `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}}`)
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.HookEvent("UserPromptSubmit", "hi", "")),
		execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetHook().GetBlocked() || res.GetHook().GetRan() != 1 {
		t.Fatalf("control: %v %v", res, err)
	}
}

// The hooks of a plan-mode call (a subagent's narrower mode in a build-mode session) run in plan mode too: the
// project read-only to them and "plan" as their permission_mode. Control: the same call in build mode, whose hook
// writes. Found by red team.
func TestHooksOfAPlanModeCallRunInPlanMode(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	e := brokertest.New(t)
	// The hook notes its permission_mode in the session's temp folder (writable in both modes), then writes the
	// project.
	hook := e.Script(t, "mark.sh", `in=$(cat); m=${in#*'"permission_mode":"'}; echo "${m%%'"'*}" >> "$TMPDIR/modes"
touch "$CLAUDE_PROJECT_DIR/hook-wrote-$$" 2>/dev/null; exit 0`)
	e.Settings(t, brokertest.HooksJSON("PreToolUse", "*", hook, ""))
	brokertest.MustWrite(t, filepath.Join(e.Root, "a.txt"), "a\n")
	c := e.Client()
	sid := e.Open(c)
	wrote := func() int {
		m, _ := filepath.Glob(filepath.Join(e.Root, "hook-wrote-*"))
		for _, f := range m {
			os.Remove(f)
		}
		return len(m)
	}
	for _, mode := range []execv1.Mode{execv1.Mode_MODE_BUILD, execv1.Mode_MODE_PLAN} {
		op := brokertest.Read(filepath.Join(e.Root, "a.txt"))
		op.Mode = mode
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
			t.Fatalf("%v: %v %v", mode, res, err)
		}
		switch n := wrote(); {
		case mode == execv1.Mode_MODE_BUILD && n != 1:
			t.Fatal("control: the build-mode call's hook did not write, so the test shows nothing")
		case mode == execv1.Mode_MODE_PLAN && n != 0:
			t.Error("the plan-mode call's hook wrote the project")
		}
	}
	modes, _ := os.ReadFile(filepath.Join(tmp, fmt.Sprintf("garuda-%d", os.Getuid()), sid, "tmp", "modes"))
	if string(modes) != "default\nplan\n" {
		t.Errorf("the hooks' permission_mode, build then plan: %q", modes)
	}
}
