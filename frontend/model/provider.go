package model

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	// Preconnect (with no HTTPClient) dials the provider's first connection now, in the background, for the first
	// request to take (garuda run: its first request follows the session at once).
	Preconnect bool
}

// The SDKs' own retries are off (option.WithMaxRetries(0)): the agent loop is the one retry layer, so that each
// retry is a notice the user sees and a final error (400, 401, 404) ends the prompt at once.

// New returns the Client for cfg.Type.
func New(cfg ProviderConfig) (Client, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("model provider %q: no model id", cfg.Type)
	}
	if cfg.Preconnect && cfg.HTTPClient == nil && (cfg.Type == TypeAnthropic || cfg.Type == TypeOpenAI) {
		cfg.HTTPClient = preconnected(cfg)
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

// retryAfter is how long the provider asked to wait (retry-after-ms, else retry-after in seconds or as an HTTP
// date), or 0.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if sec, err := strconv.ParseFloat(v, 64); err == nil && sec > 0 {
		return time.Duration(sec * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// transient reports whether an HTTP status is worth trying again: a timeout, a conflict, a rate limit, a
// server error or an overload (529). A provider's x-should-retry header, when present, decides instead.
func transient(status int, h http.Header) bool {
	switch h.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// httpError is the StreamError of a provider's HTTP error answer: ErrAuth (401, 403), ErrNotFound (404),
// ErrContextTooLong (413 or a message that says so), else transient or final by its status.
func httpError(provider string, status int, h http.Header, msg string, started bool, authType, tooLarge, notFound bool) *StreamError {
	se := &StreamError{Status: status, Started: started}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || authType:
		se.Err = fmt.Errorf("%w: %s said: %s", ErrAuth, provider, msg)
	case status == http.StatusRequestEntityTooLarge || tooLarge || contextTooLong(msg):
		se.Err = fmt.Errorf("%w: %s said: %s", ErrContextTooLong, provider, msg)
	case status == http.StatusNotFound || notFound:
		se.Err = fmt.Errorf("%w: %s said: HTTP %d: %s", ErrNotFound, provider, status, msg)
	default:
		se.Err = fmt.Errorf("%s: HTTP %d: %s", provider, status, msg)
		se.Retryable = transient(status, h)
		if se.Retryable {
			se.RetryAfter = retryAfter(h)
		}
	}
	return se
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
	for _, s := range []string{"prompt is too long", "context_length_exceeded", "maximum context length",
		"context length", "context window", "too many tokens"} {
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
