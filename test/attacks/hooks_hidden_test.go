package attacks

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// TestProjectHooksInAHiddenFileAreNotShown: a project's hooks in a settings file a read rule hides (the user's
// read_file(.claude/**), read_file(.garuda/**)) are not read: no consent question shows their commands, and they
// do not run. Control: with no rule hiding the file, the question shows the hook's command.
func TestProjectHooksInAHiddenFileAreNotShown(t *testing.T) {
	const secret = "echo tok-5f3a9c > hook-ran"
	for _, file := range []string{".claude/settings.json", ".garuda/settings.json"} {
		for _, hidden := range []bool{false, true} {
			e := brokertest.New(t)
			deny := `[]`
			if hidden {
				deny = `["read_file(` + filepath.Dir(file) + `/**)"]`
			}
			e.Settings(t, `{"permissions": {"deny": `+deny+`}}`)
			brokertest.MustWrite(t, filepath.Join(e.Root, file), brokertest.HooksJSON("UserPromptSubmit", "", secret, ""))
			c := e.Client()
			sid := e.Open(c)
			res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.HookEvent("UserPromptSubmit", "hello", "")),
				execv1.Choice_CHOICE_ONCE)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			shown := false
			for _, q := range qs {
				shown = shown || strings.Contains(q.GetPreview()+q.GetTitle(), "tok-5f3a9c")
			}
			ran := brokertest.Exists(filepath.Join(e.Root, "hook-ran"))
			switch {
			case !hidden && (!shown || !ran):
				t.Fatalf("control %s: the consent question should show the hook (%v) and it should run (%v): %v %s", file, shown, ran,
					qs, res.GetContent())
			case hidden && (shown || ran || len(qs) > 0):
				t.Errorf("%s is hidden by a rule, yet its hook was shown (%v), asked about (%d questions) or run (%v)", file, shown, len(qs), ran)
			}
		}
	}
}

// Found by red team (class 1). TestProjectSettingsInAHiddenFileSayNothing: a project's .garuda/settings.json that a
// read rule of the user or the team hides is not read at all: what the session's start answers (its notices) and
// what a request is answered (a deny rule's reason quotes the rule) are the same whatever the file holds, and
// whether it exists. Control: with no rule hiding it, the worlds differ (the file is the project's settings).
func TestProjectSettingsInAHiddenFileSayNothing(t *testing.T) {
	worlds := map[string]string{
		"missing":   "",
		"malformed": `{"permissions": {"allow": ["tok-91c2e7"]}}`,
		"loosening": `{"permissions": {"allow": ["bash(curl tok-91c2e7)"]}}`,
		"a deny":    `{"permissions": {"deny": ["read_file(notes.txt)"]}, "limits": {"processes": 3}}`,
	}
	observe := func(t *testing.T, hidden bool, content string) string {
		dir := t.TempDir()
		e := brokertest.NewIn(t, dir, filepath.Join(dir, "project"), filepath.Join(dir, "home"))
		if hidden {
			e.Settings(t, `{"permissions": {"deny": ["Read(.garuda/**)"]}}`)
		}
		if content != "" {
			brokertest.MustWrite(t, filepath.Join(e.Root, ".garuda", "settings.json"), content)
		}
		brokertest.MustWrite(t, filepath.Join(e.Root, "notes.txt"), "hello\n")
		c := e.Client()
		r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: e.Root})
		if err != nil {
			t.Fatal(err)
		}
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Read("notes.txt")),
			execv1.Choice_CHOICE_ONCE)
		seen := fmt.Sprintf("notices: %q\nresult: %v %q %v\nquestions: %d", r.GetNotices(), err, res.GetContent(), res.GetStatus(), len(qs))
		return strings.ReplaceAll(seen, dir, "$DIR")
	}
	for _, hidden := range []bool{true, false} {
		seen := map[string]string{}
		for name, content := range worlds {
			seen[observe(t, hidden, content)] = name
		}
		switch {
		case hidden && len(seen) != 1:
			t.Errorf("the session's answers depend on a settings file a read rule hides:\n%v", seen)
		case !hidden && len(seen) != len(worlds):
			t.Errorf("control: with no rule hiding it, the project's settings should tell the worlds apart:\n%v", seen)
		}
	}
}
