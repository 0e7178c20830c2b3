package broker_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// garuda undo restores the exact pre-image of the session's last change.
func TestUndoRestoresThePreImage(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	path := filepath.Join(e.Root, "u.txt")
	pre := []byte("line one\xff\r\nline two")
	os.WriteFile(path, pre, 0o640)
	wres, _, werr := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("u.txt", "replaced")),
		execv1.Choice_CHOICE_ONCE)
	if data, _ := os.ReadFile(path); string(data) != "replaced" {
		t.Fatalf("write: %q (%v %v)", data, wres, werr)
	}
	res, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != string(pre) || res.GetRestored().GetPath() != path {
		t.Fatalf("undo left %q (%v)", data, res)
	}
	// Nothing left to undo: a clear refusal, not a silent success.
	if _, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid}); err == nil {
		t.Fatal("a second undo succeeded with nothing to undo")
	}
}

// A project opened by a path through a symlink (~/code -> /data/code) can undo its changes: the snapshot names the
// file by its real path, which undo reaches without following a link.
func TestUndoInARootReachedThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := errors.Join(os.MkdirAll(real, 0o755), os.Symlink(real, link)); err != nil {
		t.Fatal(err)
	}
	e := brokertest.NewIn(t, dir, link, filepath.Join(dir, "home"))
	c := e.Client()
	sid := e.Open(c)
	path := filepath.Join(real, "u.txt")
	brokertest.MustWrite(t, path, "before")
	if res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("u.txt", "after")),
		execv1.Choice_CHOICE_ONCE); err != nil ||
		res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("write: %v %v", res, err)
	}
	res, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid})
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "before" || res.GetRestored().GetPath() != path {
		t.Fatalf("undo left %q (%v)", data, res)
	}
}
