package attacks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/broker/sessionlog"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// TestResumeOfAnotherUsersSessionDependsOnNothingInIt: a shared broker refuses another user's session by its
// header, and the refusal is the same whatever the rest of the file is or whoever holds it: not "in use" while its
// owner has it open (taking the owner's lock, even briefly, would also make the owner's own resume fail), not a
// corrupt line further down, not its size. Control: the caller's own session with the same file is refused for
// what the file is (in use, corrupt).
func TestResumeOfAnotherUsersSessionDependsOnNothingInIt(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	dir := filepath.Join(e.Home, "sessions")
	me := uint32(os.Getuid())
	other := me + 1000
	resume := func(id string) string {
		t.Helper()
		st, err := c.ResumeSession(brokertest.Ctx(t), &execv1.ResumeSessionRequest{SessionId: id, Root: e.Root})
		if err == nil {
			_, err = st.Recv()
		}
		if err == nil {
			t.Fatalf("resume %s: no error", id)
		}
		return err.Error()
	}
	// open: a session its owner has open (the writer holds the lock); corrupt: one with a broken line past its header.
	open := func(id string, uid uint32) *sessionlog.Writer {
		w := sessionlog.Create(dir, id, sessionlog.Header{Root: e.Root, UID: uid})
		if err := w.Append(sessionlog.KindPrompt, json.RawMessage(`"hi"`)); err != nil {
			t.Fatal(err)
		}
		return w
	}
	corrupt := func(id string, uid uint32) {
		open(id, uid).Close()
		f, err := os.OpenFile(filepath.Join(dir, id+".jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("not a line of a session\n")
		f.Close()
	}
	wMine := open("mineopen", me)
	defer wMine.Close()
	corrupt("minecorrupt", me)
	if got := resume("mineopen"); strings.Contains(got, "another user") {
		t.Fatalf("control: the caller's own open session: %s", got)
	}
	if got := resume("minecorrupt"); !strings.Contains(got, "line") {
		t.Fatalf("control: the caller's own corrupt session should name its line: %s", got)
	}
	wOther := open("otheropen", other)
	defer wOther.Close()
	corrupt("othercorrupt", other)
	for _, id := range []string{"otheropen", "othercorrupt"} {
		if got := resume(id); !strings.Contains(got, "another user") || strings.Contains(got, "line") ||
			strings.Contains(got, "close it") {
			t.Errorf("resume of another user's %s answers for what is in it: %s", id, got)
		}
	}
}
