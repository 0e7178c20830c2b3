package attacks

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
)

// TestDeferredMercurialRunsNothingACommandLeft: Mercurial runs the hooks (and loads the extensions) of a
// repository's .hg/hgrc on hg status, as git runs core.fsmonitor: an hgrc a command plants in a new .hg folder is
// removed, and the user's own is read-only. Controls: outside the sandbox hg runs each plant.
func TestDeferredMercurialRunsNothingACommandLeft(t *testing.T) {
	testenv.NeedCommand(t, "hg", "mercurial")
	const hook = `printf '[hooks]\npre-status = touch PWNED\n'`
	for _, tc := range []struct{ name, before, attack, in string }{
		{"a new repository's hgrc", "", "mkdir -p x/.hg && echo store > x/.hg/requires && " + hook + " > x/.hg/hgrc", "x"},
		{"the user's repository's hgrc", "hg init y && printf '[ui]\\nusername = me\\n' > y/.hg/hgrc", hook + " >> y/.hg/hgrc", "y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sandboxed := range []bool{false, true} {
				e := brokertest.New(t)
				if tc.before != "" {
					setup(t, e.Root, tc.before)
				}
				c := e.Client()
				sid := e.Open(c)
				res := shIn(t, c, sid, tc.attack, sandboxed)
				cmd := exec.Command("hg", "status")
				cmd.Dir = filepath.Join(e.Root, tc.in)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "HGRCPATH="}
				cmd.Run()
				switch ran := brokertest.Exists(filepath.Join(e.Root, tc.in, "PWNED")); {
				case !sandboxed && !ran:
					t.Fatalf("control: outside the sandbox hg did not run the hook: %s", res.GetContent())
				case sandboxed && ran:
					t.Errorf("hg ran a hook a sandboxed command left: %s", res.GetContent())
				}
			}
		})
	}
}
