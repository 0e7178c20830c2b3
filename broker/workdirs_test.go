package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A relative $TMPDIR (TMPDIR=tmp in a shell's profile): commands run, with a temp folder in /tmp; nothing is made in
// the broker's working folder, the project (the sandbox refused the relative path, and every command failed).
func TestRelativeTMPDIR(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	t.Chdir(root)
	t.Setenv("TMPDIR", "reltmp")
	e := brokertest.NewAt(t, root, home)
	c := e.Client()
	sid := e.Open(c)
	r := brokertest.Sh(t, c, sid, `echo "ran in $TMPDIR"`)
	want := fmt.Sprintf("ran in /tmp/garuda-%d/%s/tmp", os.Getuid(), sid)
	if r.GetExitCode() != 0 || !strings.Contains(r.GetContent(), want) {
		t.Fatalf("want %q: %v", want, r)
	}
	if brokertest.Exists(filepath.Join(e.Root, "reltmp")) {
		t.Fatalf("a folder reltmp was made in the working folder")
	}
}

// A session's folders left by a broker that was killed before it could remove them (SIGKILL, the OOM killer) are
// removed by the next session that makes its own; a live session's folders, and an older broker's (which does not
// lock them), are not.
func TestStaleSessionFoldersAreSwept(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	base := filepath.Join(tmp, fmt.Sprintf("garuda-%d", os.Getuid()))
	live := brokertest.New(t)
	lc := live.Client()
	liveID := live.Open(lc)
	brokertest.Sh(t, lc, liveID, `echo live > "$TMPDIR/file"`)
	if !brokertest.Exists(filepath.Join(base, liveID, ".held")) {
		t.Fatalf("the live session's folder is not marked as held")
	}
	stale := filepath.Join(base, "0123456789abcdef01234567")
	older := filepath.Join(base, "76543210fedcba9876543210")
	for _, f := range []string{filepath.Join(stale, ".held"), filepath.Join(stale, "tmp", "left"), filepath.Join(older, "tmp", "left")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := brokertest.New(t)
	c := e.Client()
	brokertest.Sh(t, c, e.Open(c), `true`)
	deadline := time.Now().Add(10 * time.Second)
	for brokertest.Exists(stale) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if brokertest.Exists(stale) {
		t.Errorf("the folder of a session no broker holds is left: %s", stale)
	}
	if !brokertest.Exists(filepath.Join(base, liveID, "tmp", "file")) {
		t.Errorf("the live session's temp folder was removed")
	}
	if !brokertest.Exists(older) {
		t.Errorf("an older broker's folder (no mark: it may be live) was removed")
	}
	if r := brokertest.Sh(t, lc, liveID, `cat "$TMPDIR/file"`); !strings.Contains(r.GetContent(), "live") {
		t.Errorf("the live session lost its temp file: %v", r)
	}
}
