package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A session's folders end with it, also where $TMPDIR is too long a path for a socket and the commands' proxy
// sockets are kept in /tmp/garuda-UID instead (those were left behind: a folder a session, thousands in /tmp).
func TestSessionFoldersEndWithIt(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long TMPDIR %v", long), func(t *testing.T) {
			tmp := t.TempDir()
			if long {
				tmp = filepath.Join(tmp, strings.Repeat("x", 90))
				if err := os.Mkdir(tmp, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("TMPDIR", tmp)
			e := brokertest.New(t)
			c := e.Client()
			sid := e.Open(c)
			r := brokertest.Sh(t, c, sid, `echo left > "$TMPDIR/file"; echo $TMPDIR`)
			if r.GetExitCode() != 0 {
				t.Fatalf("%v", r)
			}
			uid := os.Getuid()
			folders := []string{filepath.Join(tmp, fmt.Sprintf("garuda-%d", uid), sid), filepath.Join(fmt.Sprintf("/tmp/garuda-%d", uid), sid)}
			var seen []string
			for _, f := range folders {
				if brokertest.Exists(f) {
					seen = append(seen, f)
				}
			}
			if len(seen) == 0 || long && len(seen) != 2 { // the control: the command had them
				t.Fatalf("the session's folders while it is open: %v", seen)
			}
			if _, err := c.CloseSession(brokertest.Ctx(t), &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
				t.Fatal(err)
			}
			for _, f := range seen {
				if brokertest.Exists(f) {
					t.Errorf("%s is left after the session ended", f)
				}
			}
		})
	}
}
