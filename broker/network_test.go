package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// With no call to ask on (a process between prompts), a host the policy would ask about is refused with why and how
// to allow it, a host a rule allows is let through, and each decision is audited.
func TestNetworkWithoutAPromptRefusesQuestions(t *testing.T) {
	dir := t.TempDir()
	home, root := filepath.Join(dir, "home"), filepath.Join(dir, "project")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"permissions":{"allow":["network(domain:ok.example)"]}}`), 0o600)
	s := NewService(Config{Home: home, ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
	defer s.Shutdown()
	ctx := context.Background() // no peer: the in-process caller, as the session's owner
	res, err := s.OpenSession(ctx, &execv1.OpenSessionRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.session(ctx, res.GetSessionId())
	if err != nil {
		t.Fatal(err)
	}
	decide := s.commandNetwork(nil, nil, sess, "npm start")
	if _, err := decide(ctx, "asks.example", 443); err == nil || !strings.Contains(err.Error(), "no prompt is running") ||
		!strings.Contains(err.Error(), `"network(domain:asks.example)"`) {
		t.Errorf("a question without a prompt: %v", err)
	}
	if r, err := decide(ctx, "ok.example", 443); err != nil || !r.Private {
		t.Errorf("a host a rule names: %+v %v", r, err)
	}
}
