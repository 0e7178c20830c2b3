package spawn

import (
	"slices"
	"testing"
)

// The broker's environment is the front end's less the provider keys: whatever ends in _API_KEY or _AUTH_TOKEN by
// its name, not by its value, and nothing else.
func TestBrokerEnv(t *testing.T) {
	env := []string{"PATH=/usr/bin", "ANTHROPIC_API_KEY=sk-1", "LOCAL_API_KEY=", "X_AUTH_TOKEN=t=1", "NOTE=ends in _API_KEY",
		"API_KEY_FILE=/k", "GARUDA_HOME=/h", "ODD", "_API_KEY=x", "TOKEN=y"}
	got := BrokerEnv(env)
	want := []string{"PATH=/usr/bin", "NOTE=ends in _API_KEY", "API_KEY_FILE=/k", "GARUDA_HOME=/h", "ODD", "TOKEN=y"}
	if !slices.Equal(got, want) {
		t.Errorf("BrokerEnv = %q, want %q", got, want)
	}
	if env[1] != "ANTHROPIC_API_KEY=sk-1" {
		t.Error("BrokerEnv changed its argument")
	}
}
