package model

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Provider types.
const (
	TypeAnthropic = "anthropic"
	TypeOpenAI    = "openai"
)

// DefaultMaxOutputTokens is used when neither the Request nor the ProviderConfig sets a limit.
const DefaultMaxOutputTokens = 8192

// ProviderConfig says how to reach one model.
type ProviderConfig struct {
	Type            string // "anthropic" or "openai"
	BaseURL         string // empty: the provider's public API
	APIKey          string
	Model           string
	MaxOutputTokens int
	HTTPClient      *http.Client // nil: http.DefaultClient
	// MaxRetries is how often the SDK retries a request that failed before its stream began
	// (connection errors, 408, 409, 429, 5xx). 0 keeps the SDK's default (2); negative means none.
	MaxRetries int
}

// New returns the Client for cfg.Type.
func New(cfg ProviderConfig) (Client, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("model provider %q: no model id", cfg.Type)
	}
	switch cfg.Type {
	case TypeAnthropic:
		return NewAnthropic(cfg), nil
	case TypeOpenAI:
		return NewOpenAI(cfg), nil
	default:
		return nil, fmt.Errorf("model provider type %q: unknown (want %q or %q)", cfg.Type, TypeAnthropic, TypeOpenAI)
	}
}

func (cfg ProviderConfig) maxTokens(req Request) int64 {
	switch {
	case req.MaxTokens > 0:
		return int64(req.MaxTokens)
	case cfg.MaxOutputTokens > 0:
		return int64(cfg.MaxOutputTokens)
	default:
		return DefaultMaxOutputTokens
	}
}

func (cfg ProviderConfig) retries() (int, bool) {
	switch {
	case cfg.MaxRetries < 0:
		return 0, true
	case cfg.MaxRetries > 0:
		return cfg.MaxRetries, true
	default:
		return 0, false
	}
}

// providerMessage digs the human-readable message out of a provider's error body
// ({"error": {"message": ...}} for both Anthropic and OpenAI), else returns the body trimmed.
func providerMessage(raw string) string {
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(raw), &env) == nil {
		if env.Error.Message != "" {
			return env.Error.Message
		}
		if env.Message != "" {
			return env.Message
		}
	}
	raw = strings.TrimSpace(raw)
	if len(raw) > 500 {
		raw = raw[:500] + "…"
	}
	return raw
}

// contextTooLong reports whether a provider's error message says the prompt is over the window.
func contextTooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"prompt is too long", "context_length_exceeded", "maximum context length", "context length", "context window", "too many tokens"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// emptyObject is the input of a tool call whose arguments were empty.
var emptyObject = json.RawMessage(`{}`)

// toolInput checks that the assembled arguments of a tool call are one JSON value.
func toolInput(raw []byte, tool string) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return emptyObject, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("tool call %s: the model sent arguments that are not valid JSON: %.200s", tool, raw)
	}
	return json.RawMessage(raw), nil
}
