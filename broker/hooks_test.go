package broker

import (
	"errors"
	"slices"
	"testing"

	"github.com/garuda-dev/garuda/policy"
)

// The session's hooked events are exactly those with a hook in some file (team, user, project, .claude), whatever
// its matcher, and UserPromptSubmit when team policy could not be read (its report blocks the prompt): the front
// end reports only these, so a missing one would be a hook that never runs.
func TestHookedEvents(t *testing.T) {
	settings := func(name, hooks string) *policy.Settings {
		t.Helper()
		s, err := policy.ParseSettings(name, []byte(`{"hooks": {`+hooks+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hook := func(event, matcher string) string {
		return `"` + event + `": [{"matcher": "` + matcher + `", "hooks": [{"type": "command", "command": "true"}]}]`
	}
	claude := settings("/p/.claude/settings.json", hook("SessionEnd", "*"))
	files := policyFiles{
		team:        settings("/etc/garuda/policy.json", hook("Stop", "*")),
		user:        settings("/h/settings.json", hook("SessionStart", "resume")),
		project:     settings("/p/.garuda/settings.json", hook("Notification", "permission_prompt")),
		claudeHooks: claude.Hooks,
	}
	got := hookedEvents(files).GetEvents()
	want := []string{policy.HookStop, policy.HookSessionStart, policy.HookSessionEnd, policy.HookNotification}
	for _, ev := range frontEndEvents {
		if slices.Contains(got, ev) != slices.Contains(want, ev) {
			t.Errorf("%s listed: %v, want %v (list %v)", ev, slices.Contains(got, ev), slices.Contains(want, ev), got)
		}
	}
	if got := hookedEvents(policyFiles{}).GetEvents(); len(got) != 0 {
		t.Errorf("no settings: %v", got)
	}
	if got := hookedEvents(policyFiles{teamErr: errors.New("line 1: bad")}).GetEvents(); !slices.Equal(got,
		[]string{policy.HookUserPromptSubmit}) {
		t.Errorf("unreadable team policy: %v", got)
	}
}
