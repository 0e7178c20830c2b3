package acpagent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/test/editor"
)

func TestModelErrors(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	e.fake.Push(model.Step{Err: errors.New("the provider exploded")})
	_, err := e.prompt(sid, acp.TextBlock("hi"))
	if err == nil || !strings.Contains(editor.RequestError(t, err).Message, "the provider exploded") {
		t.Errorf("model error: %v", err)
	}
	e.fake.Push(model.Step{Err: fmt.Errorf("status 401: %w", model.ErrAuth)})
	_, err = e.prompt(sid, acp.TextBlock("hi"))
	if err == nil || editor.RequestError(t, err).Code != -32000 {
		t.Errorf("refused key: %v, want auth required (-32000)", err)
	}
	if _, err := e.prompt("no-such-session", acp.TextBlock("hi")); err == nil {
		t.Error("a prompt to an unknown session succeeded")
	}
	// The session still works.
	e.fake.Push(model.TextStep("fine"))
	e.promptEndsTurn(sid, "again")
}
