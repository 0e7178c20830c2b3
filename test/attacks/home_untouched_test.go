package attacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
)

// Found by red team (where the class-1 and class-2 passes meet). The guard reads where the home's dot entries link
// to (a dotfiles repository), three levels into its dot folders: when $GARUDA_HOME is one of them (~/.garuda, the
// default), it listed Garuda's own folders — the sessions, the undo snapshots —, which hold no link of the user's
// configuration, so that how long a session's first command takes grew with them. Now $GARUDA_HOME and the team's
// audit folder are left out. Control: a dot folder of the user's beside it is listed.
func TestRedTeamGuardListsNoFolderOfGarudasHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	gh := filepath.Join(home, ".garuda")
	for _, d := range []string{"sessions", "undo", "keep"} {
		if err := os.MkdirAll(filepath.Join(gh, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mustMkdir(t, filepath.Join(home, ".config", "nvim"))
	e := brokertest.NewAt(t, filepath.Join(t.TempDir(), "project"), gh)
	watch := watchTrees(t, filepath.Join(gh, "keep"), filepath.Join(gh, "undo"), filepath.Join(home, ".config"))
	c := e.Client()
	sid := e.Open(c)
	brokertest.Sh(t, c, sid, "true")
	var listed []string
	for _, ev := range watch() {
		if strings.HasSuffix(ev, ": ") { // the folder itself opened: listed
			listed = append(listed, strings.TrimPrefix(strings.TrimSuffix(ev, ": "), home))
		}
	}
	if !strings.Contains(strings.Join(listed, " "), "/.config") {
		t.Errorf("control: the user's dot folder ~/.config should be listed for its links: %v", listed)
	}
	for _, l := range listed {
		if strings.HasPrefix(l, "/.garuda/") { // the broker reads its own home's top (settings, hooks)
			t.Errorf("a folder of $GARUDA_HOME was listed: %v", listed)
			break
		}
	}
}
