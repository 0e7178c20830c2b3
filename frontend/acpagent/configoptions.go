package acpagent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	"github.com/garuda-dev/garuda/frontend/visible"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Ids of the session's config options.
const (
	configModel   = "model"
	configThought = "thought_level"
	configMode    = "mode"
)

// Thought levels, and what each asks of a provider: Anthropic's extended thinking budget, OpenAI's reasoning effort.
const thoughtOff = "off"

var thinkingBudget = map[string]int{"low": 2048, "medium": 8192, "high": 24576}

// levels are the thought levels a model offers: none for a model without reasoning, no "off" for one that always
// reasons.
func levels(reasoning string) []string {
	switch reasoning {
	case "optional":
		return []string{thoughtOff, "low", "medium", "high"}
	case "always":
		return []string{"low", "medium", "high"}
	}
	return nil
}

// modelConfig is the session's choice of model and thought level, applied from the next turn.
type modelConfig struct {
	settings *execv1.ModelSettings
	client   model.Client
	choices  []*execv1.ModelChoice // what the editor may pick
	thought  string                // "" when the model offers no levels
}

// defaultThought is the level of a model before the user picks one: off where off is offered, else medium.
func defaultThought(reasoning string) string {
	l := levels(reasoning)
	switch {
	case len(l) == 0:
		return ""
	case l[0] == thoughtOff:
		return thoughtOff
	}
	return "medium"
}

// setModel makes a model the session's from its next turn; the thought level stays when the model offers it.
func (s *acpSession) setModel(ms *execv1.ModelSettings, client model.Client, choices []*execv1.ModelChoice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	thought := s.cfg.thought
	if !slices.Contains(levels(ms.GetReasoning()), thought) {
		thought = defaultThought(ms.GetReasoning())
	}
	s.cfg = modelConfig{settings: ms, client: client, choices: choices, thought: thought}
}

// applyConfig gives the conversation the model and thought level chosen; it runs as a turn begins, when nothing
// else uses the conversation.
func (s *acpSession) applyConfig() {
	s.mu.Lock()
	c := s.cfg
	s.mu.Unlock()
	if c.client == nil {
		return
	}
	s.model = c.settings // read by this turn's goroutine only (modelError)
	ag := s.conv
	ag.Model = c.client
	ag.ContextWindow = int(c.settings.GetContextWindow())
	ag.MaxOutputTokens = int(c.settings.GetMaxOutputTokens())
	ag.ThinkingBudget, ag.ReasoningEffort = 0, ""
	if c.thought != "" && c.thought != thoughtOff {
		if c.settings.GetType() == "anthropic" {
			ag.ThinkingBudget = thinkingBudget[c.thought]
		} else {
			ag.ReasoningEffort = c.thought
		}
	}
}

// configOptions are the session's options as the editor shows them, each a select.
func (s *acpSession) configOptions() []acp.SessionConfigOption {
	s.mu.Lock()
	c, mode := s.cfg, s.mode
	if s.pendingMode != "" {
		mode = s.pendingMode // chosen during a turn: the picker shows the choice, which applies when the turn ends
	}
	s.mu.Unlock()
	type option = acp.SessionConfigSelectOption
	sel := func(id, name string, cat acp.SessionConfigOptionCategory, current string, opts []option) acp.SessionConfigOption {
		o := acp.SessionConfigSelectOptionsUngrouped(opts)
		return acp.SessionConfigOption{Select: &acp.SessionConfigOptionSelect{Id: acp.SessionConfigId(id), Name: name,
			Category: acp.Ptr(cat), CurrentValue: acp.SessionConfigValueId(current), Type: "select",
			Options: acp.SessionConfigSelectOptions{Ungrouped: &o}}}
	}
	var out []acp.SessionConfigOption
	if c.settings != nil {
		var models []acp.SessionConfigSelectOption
		for _, name := range modelNames(c) {
			models = append(models, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(name), Name: visible.OneLine(name)})
		}
		out = append(out, sel(configModel, "Model", acp.SessionConfigOptionCategoryModel, c.settings.GetName(), models))
		if l := levels(c.settings.GetReasoning()); len(l) > 0 {
			var opts []acp.SessionConfigSelectOption
			for _, v := range l {
				opts = append(opts, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(v), Name: strings.ToUpper(v[:1]) + v[1:]})
			}
			out = append(out, sel(configThought, "Thinking", acp.SessionConfigOptionCategoryThoughtLevel, c.thought, opts))
		}
	}
	var ms []acp.SessionConfigSelectOption
	for _, m := range modes(mode).AvailableModes {
		ms = append(ms, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description})
	}
	out = append(out, sel(configMode, "Mode", acp.SessionConfigOptionCategoryMode, mode, ms))
	return out
}

// modelNames are the models offered: the available ones, and the current one even when it is not among them
// (a provider/model-id from --model).
func modelNames(c modelConfig) []string {
	var names []string
	for _, m := range c.choices {
		names = append(names, m.GetName())
	}
	if cur := c.settings.GetName(); !slices.Contains(names, cur) {
		names = append([]string{cur}, names...)
	}
	return names
}

// SetSessionConfigOption sets the model, the thought level or the mode; a value not offered is -32602 with the
// values that are.
func (s *server) SetSessionConfigOption(ctx context.Context,
	p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	if p.ValueId == nil {
		return acp.SetSessionConfigOptionResponse{}, invalidParams("Garuda's config options are selects: send a value id")
	}
	v := p.ValueId
	sess, err := s.lookup(v.SessionId)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	value := string(v.Value)
	switch string(v.ConfigId) {
	case configMode:
		if err := sess.setMode(ctx, value); err != nil {
			return acp.SetSessionConfigOptionResponse{}, err
		}
		sess.update(s.base, acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(value)}})
	case configModel:
		if err := sess.pickModel(ctx, value); err != nil {
			return acp.SetSessionConfigOptionResponse{}, err
		}
	case configThought:
		sess.mu.Lock()
		allowed := []string(nil)
		if sess.cfg.settings != nil {
			allowed = levels(sess.cfg.settings.GetReasoning())
		}
		ok := slices.Contains(allowed, value)
		if ok {
			sess.cfg.thought = value
		}
		sess.mu.Unlock()
		if len(allowed) == 0 {
			return acp.SetSessionConfigOptionResponse{}, invalidParams("the current model offers no thought levels")
		}
		if !ok {
			return acp.SetSessionConfigOptionResponse{}, notOffered(configThought, value, allowed)
		}
		sess.record(recConfig, configRecord{ID: configThought, Value: value})
	default:
		return acp.SetSessionConfigOptionResponse{}, invalidParams(fmt.Sprintf("unknown config option %q (model, thought_level, mode)",
			visible.OneLine(string(v.ConfigId))))
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: sess.configOptions()}, nil
}

// notOffered is the error for a value a config option does not offer.
func notOffered(id, value string, allowed []string) *acp.RequestError {
	msg := fmt.Sprintf("%s %q is not offered; allowed: %s", id, visible.OneLine(value), strings.Join(allowed, ", "))
	return &acp.RequestError{Code: -32602, Message: msg, Data: map[string]any{"error": msg, "allowed": allowed}}
}

// pickModel switches the session to an offered model, from its next turn: the broker reads its settings afresh.
func (s *acpSession) pickModel(ctx context.Context, name string) error {
	s.mu.Lock()
	c := s.cfg
	s.mu.Unlock()
	if c.settings == nil {
		return requestError("the session has no model yet")
	}
	names := modelNames(c)
	if !slices.Contains(names, name) {
		return notOffered(configModel, name, names)
	}
	srv := s.srv
	prep, err := srv.opts.Broker.Prepare(ctx, &execv1.PrepareRequest{Model: name, EnvKeys: EnvKeys(srv.opts.Getenv)})
	if err != nil {
		return requestError("prepare the model: " + brokerconn.Words(err).Error())
	}
	if msg := prep.GetAuthRequired(); msg != "" {
		return authRequired(msg)
	}
	ms := prep.GetReady()
	if ms == nil {
		return requestError("prepare the model: the broker gave no model settings")
	}
	client, err := srv.opts.NewModel(ms, srv.apiKey(ms))
	if err != nil {
		return requestError(fmt.Sprintf("set up the model %s: %v", ms.GetName(), err))
	}
	s.setModel(ms, client, prep.GetModels())
	s.record(recConfig, configRecord{ID: configModel, Value: name})
	s.mu.Lock()
	thought := s.cfg.thought
	s.mu.Unlock()
	s.record(recConfig, configRecord{ID: configThought, Value: thought})
	return nil
}

// modeChanged tells the editor's config option of the mode, after session/set_mode.
func (s *acpSession) modeChanged() {
	s.update(s.srv.base, acp.SessionUpdate{ConfigOptionUpdate: &acp.SessionConfigOptionUpdate{ConfigOptions: s.configOptions()}})
}
