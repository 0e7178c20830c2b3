package config

import (
	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/broker/suggest"

	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// File names inside $GARUDA_HOME.
const (
	ModelsFile      = "models.json"
	CredentialsFile = "credentials"
)

// Where a Resolved key comes from.
const (
	KeyFromEnv         = "env"         // the front end reads Resolved.APIKeyEnv
	KeyFromCredentials = "credentials" // Resolved.APIKey, from $GARUDA_HOME/credentials
	KeyNone            = "none"        // the provider takes no key (a local server)
)

// ErrAuthRequired means that the model or its key is missing: the user has to run `garuda setup`
// (ACP's "auth required"). Errors that wrap it carry a message saying what is missing.
var ErrAuthRequired = errors.New("authentication required")

// authRequired is an ErrAuthRequired whose text is only the user-facing message.
type authRequired struct{ msg string }

func (e *authRequired) Error() string { return e.msg }
func (e *authRequired) Unwrap() error { return ErrAuthRequired }

// ProviderSettings is one provider, built in or from models.json.
type ProviderSettings struct {
	Name      string
	Type      string
	BaseURL   string
	APIKeyEnv string
	line      int // in models.json; 0 for built-ins
}

// ModelSettings is one named model, built in or from models.json.
type ModelSettings struct {
	Name            string
	Provider        string
	ID              string
	ContextWindow   int
	MaxOutputTokens int
	Reasoning       string // ReasoningNone, ReasoningOptional or ReasoningAlways
	line            int
}

// Config is the merged configuration: the built-in catalog with models.json over it, and the
// credentials file.
type Config struct {
	Home            string
	ModelsPath      string
	CredentialsPath string
	Default         string // from models.json; may be empty
	Providers       map[string]ProviderSettings
	Models          map[string]ModelSettings
	// Limits of one turn ("limits" in models.json); 0 means the agent's default.
	Limits      Limits
	credentials map[string]string // provider name -> key; never printed
	defaultLine int
}

// Limits bound one turn of the agent loop.
type Limits struct {
	MaxSteps      int // model requests in one turn
	MaxTurnTokens int // tokens in one turn
}

// Resolved is what a session needs to reach its model.
type Resolved struct {
	Name, Provider, Type, BaseURL, ModelID string
	ContextWindow, MaxOutputTokens         int
	Reasoning                              string // ReasoningNone, ReasoningOptional or ReasoningAlways
	APIKeyEnv                              string // the env var the front end should read
	APIKey                                 string // from credentials, only when the env var is not set
	KeySource                              string // KeyFromEnv, KeyFromCredentials or KeyNone
}

// Home returns $GARUDA_HOME, else ~/.garuda.
func Home() (string, error) {
	if h := os.Getenv("GARUDA_HOME"); h != "" {
		return h, nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder for ~/.garuda (set GARUDA_HOME): %w", err)
	}
	return filepath.Join(u, ".garuda"), nil
}

// Load reads models.json (absent: the catalog alone) and credentials (absent: no keys) from home.
func Load(home string) (*Config, error) {
	c := &Config{
		Home:            home,
		ModelsPath:      filepath.Join(home, ModelsFile),
		CredentialsPath: filepath.Join(home, CredentialsFile),
		Providers:       map[string]ProviderSettings{},
		Models:          map[string]ModelSettings{},
	}
	for _, p := range builtinProviders {
		c.Providers[p.Name] = ProviderSettings{Name: p.Name, Type: p.Type, BaseURL: p.BaseURL, APIKeyEnv: p.APIKeyEnv}
	}
	for _, m := range builtinModels {
		c.Models[m.Name] = ModelSettings{Name: m.Name, Provider: m.Provider, ID: m.ID, ContextWindow: m.ContextWindow,
			MaxOutputTokens: m.MaxOutputTokens, Reasoning: m.Reasoning}
	}
	data, err := conffile.ReadHome(c.ModelsPath, conffile.MaxSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err // it names the file
	default:
		if err := c.parseModels(data); err != nil {
			return nil, err
		}
	}
	creds, err := readCredentials(c.CredentialsPath)
	if err != nil {
		return nil, err
	}
	c.credentials = creds
	return c, nil
}

type rawModel struct {
	ModelSettings
	providerLine int
}

// parseModels reads models.json over the catalog already in c.
func (c *Config) parseModels(data []byte) error {
	p := newParser(c.ModelsPath, data)
	userProviders := map[string]ProviderSettings{}
	var userModels []rawModel
	err := p.Object("the file", func(key string, off int64) error {
		switch key {
		case "default":
			s, soff, err := p.String(`"default"`)
			c.Default, c.defaultLine = s, p.Line(soff)
			return err
		case "limits":
			return p.Object(`"limits"`, func(k string, koff int64) error {
				var err error
				switch k {
				case "max_steps":
					c.Limits.MaxSteps, err = p.PositiveInt(`"limits" "max_steps"`)
				case "max_turn_tokens":
					c.Limits.MaxTurnTokens, err = p.PositiveInt(`"limits" "max_turn_tokens"`)
				default:
					return p.Errorf(koff, "limits: unknown key %q (known: max_steps, max_turn_tokens)", k)
				}
				return err
			})
		case "providers":
			return p.Object(`"providers"`, func(name string, off int64) error {
				ps := ProviderSettings{Name: name, line: p.Line(off)}
				if old, ok := c.Providers[name]; ok {
					ps = old // a built-in provider: the file overrides what it says
					ps.line = p.Line(off)
				}
				what := fmt.Sprintf("provider %q", name)
				err := p.Object(what, func(k string, koff int64) error {
					var err error
					var voff int64
					switch k {
					case "type":
						var t string
						t, voff, err = p.String(what + ` "type"`)
						if err == nil && t != TypeAnthropic && t != TypeOpenAI {
							return p.Errorf(voff, "%s: type %q is not known (want %q or %q)", what, t, TypeAnthropic, TypeOpenAI)
						}
						if t != "" {
							ps.Type = t
						}
					case "base_url":
						ps.BaseURL, voff, err = p.String(what + ` "base_url"`)
						if err == nil && ps.BaseURL != "" && !strings.HasPrefix(ps.BaseURL, "http://") && !strings.HasPrefix(ps.BaseURL, "https://") {
							return p.Errorf(voff, "%s: base_url %q must start with http:// or https://", what, ps.BaseURL)
						}
					case "api_key_env":
						ps.APIKeyEnv, _, err = p.String(what + ` "api_key_env"`)
					default:
						return p.Errorf(koff, "%s: unknown key %q (known: type, base_url, api_key_env)", what, k)
					}
					return err
				})
				if err != nil {
					return err
				}
				if ps.Type == "" {
					return p.Errorf(off, "%s: no \"type\" (want %q or %q)", what, TypeAnthropic, TypeOpenAI)
				}
				userProviders[name] = ps
				return nil
			})
		case "models":
			return p.Object(`"models"`, func(name string, off int64) error {
				m := rawModel{ModelSettings: ModelSettings{Name: name, line: p.Line(off)}}
				if old, ok := c.Models[name]; ok {
					m.ModelSettings = old
					m.line = p.Line(off)
				}
				what := fmt.Sprintf("model %q", name)
				err := p.Object(what, func(k string, koff int64) error {
					var err error
					switch k {
					case "provider":
						var voff int64
						var s string
						s, voff, err = p.String(what + ` "provider"`)
						if s != "" {
							m.Provider, m.providerLine = s, p.Line(voff)
						}
					case "id":
						var s string
						s, _, err = p.String(what + ` "id"`)
						if s != "" {
							m.ID = s
						}
					case "context_window":
						var n int
						n, err = p.PositiveInt(what + ` "context_window"`)
						if n > 0 {
							m.ContextWindow = n
						}
					case "max_output_tokens":
						var n int
						n, err = p.PositiveInt(what + ` "max_output_tokens"`)
						if n > 0 {
							m.MaxOutputTokens = n
						}
					case "reasoning":
						var s string
						var voff int64
						s, voff, err = p.String(what + ` "reasoning"`)
						switch s {
						case "none":
							m.Reasoning = ReasoningNone
						case ReasoningOptional, ReasoningAlways:
							m.Reasoning = s
						default:
							if err == nil {
								return p.Errorf(voff, "%s: reasoning %q is not known (want none, optional or always)", what, s)
							}
						}
					default:
						return p.Errorf(koff, "%s: unknown key %q (known: provider, id, context_window, max_output_tokens, "+
							"reasoning)", what, k)
					}
					return err
				})
				if err != nil {
					return err
				}
				if m.Provider == "" {
					return p.Errorf(off, "%s: no \"provider\"", what)
				}
				if m.ID == "" {
					m.ID = name
				}
				userModels = append(userModels, m)
				return nil
			})
		default:
			return p.Errorf(off, "unknown key %q (known: default, providers, models, limits)", key)
		}
	})
	if err != nil {
		return err
	}
	if err := p.End(); err != nil {
		return err
	}
	for name, ps := range userProviders {
		c.Providers[name] = ps
	}
	for _, m := range userModels {
		if _, ok := c.Providers[m.Provider]; !ok {
			line := m.providerLine
			if line == 0 {
				line = m.line
			}
			return fmt.Errorf("%s: line %d: model %q: provider %q is not known (known: %s)",
				c.ModelsPath, line, m.Name, m.Provider, strings.Join(c.providerNames(), ", "))
		}
		if m.ContextWindow == 0 {
			m.ContextWindow = DefaultContextWindow
		}
		if m.MaxOutputTokens == 0 {
			m.MaxOutputTokens = DefaultMaxOutputTokens
		}
		c.Models[m.Name] = m.ModelSettings
	}
	return nil
}

func (c *Config) providerNames() []string {
	names := make([]string, 0, len(c.Providers))
	for n := range c.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Resolve picks the model: override (--model or GARUDA_MODEL: a NAME, or provider/model-id),
// else the default of models.json; then its provider and key. envSet reports whether an
// environment variable holds a non-empty value in the front end's environment.
func (c *Config) Resolve(override string, envSet func(name string) bool) (*Resolved, error) {
	name := strings.TrimSpace(override)
	where := "--model or GARUDA_MODEL"
	if name == "" {
		name = c.Default
		where = fmt.Sprintf("\"default\" in %s line %d", c.ModelsPath, c.defaultLine)
	}
	if name == "" {
		return nil, &authRequired{"Garuda has no model. Run `garuda setup` to choose a model and enter its API key, " +
			"or set GARUDA_MODEL (for example claude-sonnet-4-5) and the provider's key variable (ANTHROPIC_API_KEY or OPENAI_API_KEY)."}
	}
	m, err := c.lookup(name, where)
	if err != nil {
		return nil, err
	}
	p := c.Providers[m.Provider]
	r := &Resolved{
		Name: m.Name, Provider: p.Name, Type: p.Type, BaseURL: p.BaseURL, ModelID: m.ID,
		ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens, Reasoning: m.Reasoning, APIKeyEnv: p.APIKeyEnv,
	}
	switch {
	case p.APIKeyEnv != "" && envSet != nil && envSet(p.APIKeyEnv):
		r.KeySource = KeyFromEnv
	case c.credentials[p.Name] != "":
		r.APIKey, r.KeySource = c.credentials[p.Name], KeyFromCredentials
	case p.APIKeyEnv == "":
		// A provider with no key variable (a local server) takes no key.
		r.KeySource = KeyNone
	default:
		return nil, &authRequired{fmt.Sprintf("Garuda has no API key for %s (model %s): set %s, or run `garuda setup` to store a key in %s.",
			p.Name, m.Name, p.APIKeyEnv, c.CredentialsPath)}
	}
	return r, nil
}

// Choice is a model the editor may offer.
type Choice struct {
	Name, Provider, Reasoning string
}

// Available lists the named models that can be used now: their provider has its key (in the front end's
// environment or the credentials) or takes none. Sorted by provider, then name.
func (c *Config) Available(envSet func(name string) bool) []Choice {
	var out []Choice
	for _, m := range c.Models {
		p := c.Providers[m.Provider]
		if (p.APIKeyEnv != "" && envSet != nil && envSet(p.APIKeyEnv)) || c.credentials[p.Name] != "" || p.APIKeyEnv == "" {
			out = append(out, Choice{Name: m.Name, Provider: m.Provider, Reasoning: m.Reasoning})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// lookup finds a model by NAME, else as provider/model-id.
func (c *Config) lookup(name, where string) (ModelSettings, error) {
	if m, ok := c.Models[name]; ok {
		return m, nil
	}
	if prov, id, ok := strings.Cut(name, "/"); ok && prov != "" && id != "" {
		if _, known := c.Providers[prov]; !known {
			return ModelSettings{}, fmt.Errorf("model %q (from %s): provider %q is not known (known: %s)",
				name, where, prov, strings.Join(c.providerNames(), ", "))
		}
		m := ModelSettings{Name: name, Provider: prov, ID: id, ContextWindow: DefaultContextWindow, MaxOutputTokens: DefaultMaxOutputTokens}
		// A known id keeps its known limits.
		for _, known := range c.Models {
			if known.Provider == prov && known.ID == id {
				m.ContextWindow, m.MaxOutputTokens, m.Reasoning = known.ContextWindow, known.MaxOutputTokens, known.Reasoning
				break
			}
		}
		return m, nil
	}
	names := make([]string, 0, len(c.Models))
	for n := range c.Models {
		names = append(names, n)
	}
	close := closeNames(name, names)
	msg := fmt.Sprintf("model %q (from %s) is not known", name, where)
	if len(close) > 0 {
		msg += "; did you mean " + strings.Join(close, ", ") + "?"
	} else {
		sort.Strings(names)
		msg += "; known models: " + strings.Join(names, ", ")
	}
	return ModelSettings{}, errors.New(msg + " (or write provider/model-id, for example anthropic/claude-sonnet-4-5)")
}

// closeNames returns up to 5 names near name: containing it, or a few edits away.
func closeNames(name string, names []string) []string {
	type cand struct {
		n string
		d int
	}
	var cs []cand
	low := strings.ToLower(name)
	for _, n := range names {
		d := suggest.Distance(low, strings.ToLower(n))
		if strings.Contains(strings.ToLower(n), low) || strings.Contains(low, strings.ToLower(n)) {
			d = min(d, 1)
		}
		if d <= max(2, len(name)/5) {
			cs = append(cs, cand{n, d})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.n, b.n)
	})
	var out []string
	for i := 0; i < len(cs) && i < 5; i++ {
		out = append(out, cs[i].n)
	}
	return out
}
