package acpagent

import (
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Web search is offered only where the provider runs it: Anthropic's own API, not an OpenAI-compatible server nor an
// Anthropic-compatible endpoint elsewhere.
func TestProviderSearches(t *testing.T) {
	for _, c := range []struct {
		typ, base string
		want      bool
	}{
		{"anthropic", "", true},
		{"anthropic", "https://api.anthropic.com", true},
		{"anthropic", "http://127.0.0.1:8080", false},
		{"anthropic", "https://api.anthropic.com.evil.io", false},
		{"openai", "", false},
	} {
		if got := providerSearches(&execv1.ModelSettings{Type: c.typ, BaseUrl: c.base}); got != c.want {
			t.Errorf("%s %q: %v, want %v", c.typ, c.base, got, c.want)
		}
	}
}
