package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
	"github.com/garuda-dev/garuda/internal/testproc"
)

// TestInteropTypeScriptSDK has the official TypeScript SDK (npm @agentclientprotocol/sdk, pinned in
// testdata/interop/package.json and installed here) drive the real binary: initialize, session/new, a prompt with
// a tool call and an approval, a cancel and set_mode; then, after a restart, session/list, session/load and
// session/close. The SDK validates every message with its schemas.
func TestInteropTypeScriptSDK(t *testing.T) {
	needBins(t)
	node := testenv.NeedCommand(t, "node", "nodejs")
	npm := testenv.NeedCommand(t, "npm", "npm")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "interop", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.Command(npm, "install", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	install.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install of the ACP TypeScript SDK failed (it needs the npm registry): %v\n%s", err, out)
	}

	m := &fakeOpenAI{answers: [][]string{
		{
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_edit","type":"function","function":{"name":"edit_file","arguments":"{\"path\":\"a.txt\",\"old_string\":\"old\",\"new_string\":\"new\"}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		},
		textAnswer("edited"),
		bashAnswer("call_sleep", "sleep 60.5"),
	}}
	p := startGaruda(t, m) // only for its prepared home and model server; the TS client starts its own garuda
	p.closeAndWait()
	if err := os.WriteFile(filepath.Join(p.root, "a.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(node, filepath.Join(dir, "client.mjs"), bins.garuda, p.root)
	run.Dir = dir
	run.Env = p.cmd.Env
	stderr := &testproc.Output{}
	run.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the TypeScript client's and garuda's stderr:\n%s", stderr)
		}
	})
	out, err := run.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, out)
	}
	var s struct {
		Init struct {
			ProtocolVersion int `json:"protocolVersion"`
			AuthMethods     []struct {
				ID   string   `json:"id"`
				Type string   `json:"type"`
				Args []string `json:"args"`
			} `json:"authMethods"`
		} `json:"init"`
		Session struct {
			Modes struct {
				CurrentModeID string `json:"currentModeId"`
			} `json:"modes"`
		} `json:"session"`
		Edit        struct{ StopReason string } `json:"edit"`
		Cancelled   struct{ StopReason string } `json:"cancelled"`
		Permissions []struct {
			ToolCall struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"toolCall"`
			Options []struct {
				OptionID string `json:"optionId"`
			} `json:"options"`
		} `json:"permissions"`
		Updates []json.RawMessage `json:"updates"`
		Exit    struct {
			Code *int `json:"code"`
		} `json:"exit"`
		Reopened struct {
			Init struct {
				AgentCapabilities struct {
					LoadSession         bool                       `json:"loadSession"`
					SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
				} `json:"agentCapabilities"`
			} `json:"init"`
			List struct {
				Sessions []struct {
					SessionID string `json:"sessionId"`
					Cwd       string `json:"cwd"`
					Title     string `json:"title"`
					UpdatedAt string `json:"updatedAt"`
				} `json:"sessions"`
			} `json:"list"`
			Load struct {
				Modes struct {
					CurrentModeID string `json:"currentModeId"`
				} `json:"modes"`
			} `json:"load"`
			ReplayedBeforeAnswer int `json:"replayedBeforeAnswer"`
			Replay               []struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					ToolCallID    string `json:"toolCallId"`
					Status        string `json:"status"`
				} `json:"update"`
			} `json:"replay"`
			CloseAgain *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"closeAgain"`
			Exit struct {
				Code *int `json:"code"`
			} `json:"exit"`
		} `json:"reopened"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("summary %s: %v", out, err)
	}
	if s.Init.ProtocolVersion != 1 || len(s.Init.AuthMethods) != 1 || s.Init.AuthMethods[0].ID != "garuda-setup" ||
		s.Init.AuthMethods[0].Type != "terminal" {
		t.Errorf("initialize %+v", s.Init)
	}
	if s.Session.Modes.CurrentModeID != "build" {
		t.Errorf("modes %+v", s.Session.Modes)
	}
	if s.Edit.StopReason != "end_turn" || s.Cancelled.StopReason != "cancelled" {
		t.Errorf("stop reasons %q %q", s.Edit.StopReason, s.Cancelled.StopReason)
	}
	if len(s.Permissions) != 1 || s.Permissions[0].ToolCall.ToolCallID != "call_edit" || len(s.Permissions[0].Options) != 3 {
		t.Errorf("permissions %+v", s.Permissions)
	}
	b, _ := os.ReadFile(filepath.Join(p.root, "a.txt"))
	if string(b) != "new\n" {
		t.Errorf("a.txt = %q after once", b)
	}
	all := string(out)
	if !strings.Contains(all, "Garuda: $ sleep 60.5 cancelled.") {
		t.Error("no cancel line in the updates")
	}
	if s.Exit.Code == nil || *s.Exit.Code != 0 {
		t.Errorf("garuda exited %+v", s.Exit)
	}
	// After the restart: the session is listed with its title, loads with its mode and its replay (the edit
	// completed, the stopped sleep failed) before the answer, and closes once.
	r := s.Reopened
	if !r.Init.AgentCapabilities.LoadSession || r.Init.AgentCapabilities.SessionCapabilities["list"] == nil {
		t.Errorf("capabilities after the restart %+v", r.Init.AgentCapabilities)
	}
	sid := ""
	for _, u := range s.Updates {
		var n struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(u, &n)
		sid = n.SessionID
	}
	if len(r.List.Sessions) != 1 || r.List.Sessions[0].SessionID != sid || r.List.Sessions[0].Title != "edit a.txt" ||
		r.List.Sessions[0].Cwd != p.root || r.List.Sessions[0].UpdatedAt == "" {
		t.Errorf("session/list %+v, want the session %s titled \"edit a.txt\"", r.List, sid)
	}
	if r.Load.Modes.CurrentModeID != "plan" {
		t.Errorf("loaded mode %q, want plan (set before the restart)", r.Load.Modes.CurrentModeID)
	}
	ends := map[string]string{}
	users := 0
	for _, u := range r.Replay {
		if u.Update.SessionUpdate == "tool_call_update" {
			ends[u.Update.ToolCallID] = u.Update.Status
		}
		if u.Update.SessionUpdate == "user_message_chunk" {
			users++
		}
	}
	if r.ReplayedBeforeAnswer == 0 || users != 2 ||
		ends["call_edit"] != "completed" || ends["call_sleep"] != "failed" {
		t.Errorf("replay: %d updates before the answer of %d, %d user chunks, ends %v", r.ReplayedBeforeAnswer, len(r.Replay), users, ends)
	}
	if r.CloseAgain == nil || r.CloseAgain.Code != -32602 || !strings.Contains(r.CloseAgain.Message, "unknown session") {
		t.Errorf("second close: %+v", r.CloseAgain)
	}
	if r.Exit.Code == nil || *r.Exit.Code != 0 {
		t.Errorf("the second garuda exited %+v", r.Exit)
	}
	testproc.WaitNoneLive(t, waitLimit, "sleep 60.5")
}
