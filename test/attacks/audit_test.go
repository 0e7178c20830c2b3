package attacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED. "An action that cannot be audited is not done", but Setup stored the key and Undo restored the
// file first and wrote their audit record after: with the audit log failing (its folder gone, a full disk) both
// acted unaudited, and only then reported the error. Control: with the log working both act and are recorded.
func TestRedTeamSetupAndUndoActBeforeTheirRecord(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	if res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("u.txt", "garuda\n")),
		execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("write: %v %v", res, err)
	}
	if _, err := c.Setup(brokertest.Ctx(t),
		&execv1.SetupRequest{Provider: "anthropic", Model: "m1", ApiKey: "sk-ant-first", Force: true}); err != nil {
		t.Fatalf("control Setup: %v", err)
	}
	cred := filepath.Join(e.Home, "credentials")
	if !strings.Contains(brokertest.FileText(cred), "sk-ant-first") {
		t.Fatalf("control: Setup did not store the key: %s", brokertest.FileText(cred))
	}
	if err := os.RemoveAll(filepath.Join(e.Home, "audit")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Setup(brokertest.Ctx(t),
		&execv1.SetupRequest{Provider: "anthropic", Model: "m2", ApiKey: "sk-ant-second", Force: true}); err == nil {
		t.Error("Setup succeeded with the audit log gone")
	}
	if strings.Contains(brokertest.FileText(cred), "sk-ant-second") {
		t.Error("Setup stored a key it could not audit")
	}
	if _, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: sid}); err == nil {
		t.Error("Undo succeeded with the audit log gone")
	}
	if _, err := os.Stat(filepath.Join(e.Root, "u.txt")); err != nil {
		t.Errorf("Undo removed u.txt without an audit record: %v", err)
	}
}
