package acpagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/editor"
)

// optionValue is the current value of a config option, and the values it offers ("" and nil when absent).
func optionValue(opts []acp.SessionConfigOption, id string) (string, []string) {
	for _, o := range opts {
		if o.Select != nil && string(o.Select.Id) == id {
			var vals []string
			if u := o.Select.Options.Ungrouped; u != nil {
				for _, v := range *u {
					vals = append(vals, string(v.Value))
				}
			}
			return string(o.Select.CurrentValue), vals
		}
	}
	return "", nil
}

func setOption(e *env, sid, id, value string) (acp.SetSessionConfigOptionResponse, error) {
	return e.conn.SetSessionConfigOption(e.ctx(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: acp.SessionId(sid), ConfigId: acp.SessionConfigId(id), Value: acp.SessionConfigValueId(value)}})
}

// TestConfigOptions: model, thought level and mode are selects; a pick applies from the next turn and reaches the
// provider's parameter; a value not offered is -32602 with the allowed ones; set_mode and the mode option keep in
// step; the values survive a restart and a load.
func TestConfigOptions(t *testing.T) {
	base := t.TempDir()
	var made []string
	recordModels := func(e *env, o *Options) {
		next := o.NewModel
		o.NewModel = func(ms *execv1.ModelSettings, key string) (model.Client, error) {
			made = append(made, ms.GetName())
			return next(ms, key)
		}
	}
	e := newEnvIn(t, base, recordModels)
	res, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: e.root, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	sid := string(res.SessionId)
	cur, models := optionValue(res.ConfigOptions, configModel)
	if cur != "claude-sonnet-5" || !slices.Contains(models, "claude-haiku-4-5") || slices.Contains(models, "gpt-5") {
		t.Errorf("model option %q of %v: want claude-sonnet-5, Anthropic's models (a key is set), no OpenAI's (none)", cur, models)
	}
	cur, lv := optionValue(res.ConfigOptions, configThought)
	if cur != "off" || !slices.Equal(lv, []string{"off", "low", "medium", "high"}) {
		t.Errorf("thought_level %q of %v", cur, lv)
	}
	if cur, ms := optionValue(res.ConfigOptions, configMode); cur != "build" || !slices.Equal(ms, []string{"build", "plan"}) {
		t.Errorf("mode option %q of %v", cur, ms)
	}
	for _, o := range res.ConfigOptions {
		if o.Select == nil || o.Boolean != nil || o.Select.Category == nil {
			t.Errorf("option %+v is not a select with a category", o)
		}
	}

	// Values not offered.
	for _, c := range []struct{ id, value, allowed string }{
		{configThought, "extreme", "off, low, medium, high"},
		{configModel, "gpt-5", "claude-haiku-4-5"},
		{configMode, "yolo", "build or plan"},
		{"temperature", "1", "model, thought_level, mode"},
	} {
		_, err := setOption(e, sid, c.id, c.value)
		if re := editor.RequestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, c.allowed) {
			t.Errorf("%s=%s: %d %q, want -32602 naming %q", c.id, c.value, re.Code, re.Message, c.allowed)
		}
	}

	// A thought level reaches the request as Anthropic's thinking budget.
	r, err := setOption(e, sid, configThought, "high")
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := optionValue(r.ConfigOptions, configThought); cur != "high" {
		t.Errorf("after the pick, thought_level = %q", cur)
	}
	e.fake.Push(model.TextStep("thinking hard"))
	e.promptOK(sid, "go")
	if reqs := e.fake.Requests(); reqs[len(reqs)-1].ThinkingBudget != thinkingBudget["high"] {
		t.Errorf("thinking budget %d, want %d", reqs[len(reqs)-1].ThinkingBudget, thinkingBudget["high"])
	}
	// A model pick makes the model afresh from the broker's settings, from the next turn.
	if _, err := setOption(e, sid, configModel, "claude-haiku-4-5"); err != nil {
		t.Fatal(err)
	}
	if made[len(made)-1] != "claude-haiku-4-5" {
		t.Errorf("models made: %v", made)
	}
	// The mode option and set_mode keep in step.
	before, _ := e.ed.Snapshot()
	if _, err := setOption(e, sid, configMode, "plan"); err != nil {
		t.Fatal(err)
	}
	e.ed.WaitFor(t, "current_mode_update", func(ed *editor.Editor) bool {
		for _, u := range ed.Updates[len(before):] {
			if c := u.Update.CurrentModeUpdate; c != nil && c.CurrentModeId == "plan" {
				return true
			}
		}
		return false
	})
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "build"}); err != nil {
		t.Fatal(err)
	}
	e.ed.WaitFor(t, "config_option_update with mode build", func(ed *editor.Editor) bool {
		for _, u := range ed.Updates[len(before):] {
			if c := u.Update.ConfigOptionUpdate; c != nil {
				if m, _ := optionValue(c.ConfigOptions, configMode); m == "build" {
					return true
				}
			}
		}
		return false
	})
	if _, err := setOption(e, sid, configMode, "plan"); err != nil {
		t.Fatal(err)
	}
	e.stop()

	// After a restart the load answers with the values chosen.
	e2 := newEnvIn(t, base, recordModels)
	lr, err := e2.conn.LoadSession(e2.ctx(), editor.LoadRequest(sid, e2.root))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := optionValue(lr.ConfigOptions, configModel)
	th, _ := optionValue(lr.ConfigOptions, configThought)
	md, _ := optionValue(lr.ConfigOptions, configMode)
	if m != "claude-haiku-4-5" || th != "high" || md != "plan" || lr.Modes.CurrentModeId != "plan" {
		t.Errorf("after the load: model %q, thought %q, mode %q (modes %q); want claude-haiku-4-5, high, plan",
			m, th, md, lr.Modes.CurrentModeId)
	}
	if made[len(made)-1] != "claude-haiku-4-5" {
		t.Errorf("the load made %v", made)
	}
}

func TestThoughtLevels(t *testing.T) {
	if l := levels("always"); slices.Contains(l, "off") || len(l) != 3 {
		t.Errorf("a model that always reasons offers %v", l)
	}
	if l := levels(""); l != nil {
		t.Errorf("a model without reasoning offers %v", l)
	}
	if defaultThought("always") != "medium" || defaultThought("optional") != "off" || defaultThought("") != "" {
		t.Error("default thought levels")
	}
}

// modeOptions is the mode of each config_option_update of ups, in order.
func modeOptions(ups []acp.SessionNotification) []string {
	var out []string
	for _, u := range ups {
		if c := u.Update.ConfigOptionUpdate; c != nil {
			m, _ := optionValue(c.ConfigOptions, configMode)
			out = append(out, m)
		}
	}
	return out
}

// lastModeOption is the mode of the last config_option_update of ups, and whether there was one.
func lastModeOption(ups []acp.SessionNotification) (string, bool) {
	for i := len(ups) - 1; i >= 0; i-- {
		if c := ups[i].Update.ConfigOptionUpdate; c != nil {
			m, _ := optionValue(c.ConfigOptions, configMode)
			return m, true
		}
	}
	return "", false
}

// A mode picked while a turn runs applies when the turn ends, and the editor's picker shows the pick at once: the
// config_option_update after set_mode and the answer to set_config_option name the chosen mode, not the one the
// running turn still uses (the picker sprang back to Build while the session was in Plan).
func TestModeChosenDuringATurnIsShown(t *testing.T) {
	e := newEnv(t)
	sid := e.newSession()
	release := make(chan struct{})
	step := model.TextStep("working")
	step.Wait = release
	e.fake.Push(step)
	done := e.promptInBackground(sid, "go")
	e.ed.WaitFor(t, "the turn's first text", func(ed *editor.Editor) bool { return strings.Contains(editor.Messages(ed.Updates), "working") })

	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(sid), ModeId: "plan"}); err != nil {
		t.Fatal(err)
	}
	e.ed.WaitFor(t, "a config_option_update", func(ed *editor.Editor) bool { _, ok := lastModeOption(ed.Updates); return ok })
	if ups, _ := e.ed.Snapshot(); !slices.Equal(modeOptions(ups), []string{"plan"}) {
		t.Errorf("set_mode plan during a turn: the config option updates say %v, want [plan]", modeOptions(ups))
	}
	r, err := setOption(e, sid, configMode, "build")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := optionValue(r.ConfigOptions, configMode); m != "build" {
		t.Errorf("set_config_option mode=build during a turn answered mode %q, want build", m)
	}
	if _, err := setOption(e, sid, configMode, "plan"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if r := <-done; r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("the turn stopped %q", r.StopReason)
	}
	// The pick applies from the next turn: in plan mode an edit is denied without a question.
	e.fake.Push(tool("w1", "write_file", `{"path":"a.txt","content":"x"}`), model.TextStep("done"))
	e.promptOK(sid, "write")
	if _, perms := e.ed.Snapshot(); len(perms) != 0 {
		t.Errorf("%d questions: the write was asked about, so the session is not in plan mode", len(perms))
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.txt")); err == nil {
		t.Error("a.txt was written in plan mode")
	}
}
