package attacks

import (
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
