// The command's environment: an allowlist, and never a credential.

package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestBaseEnvAllowlist(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k1")
	t.Setenv("OPENAI_API_KEY", "k2")
	t.Setenv("SOMEVENDOR_API_KEY", "k3")
	t.Setenv("GARUDA_HOME", "/secret")
	t.Setenv("GITHUB_TOKEN", "k4")
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("RANDOM_THING", "x")
	env := BaseEnv("/h", "/t", map[string]string{"GOCACHE": "/c/go", "XDG_CACHE_HOME": "/c", "EVIL_API_KEY": "x"})
	joined := strings.Join(env, "\n")
	for _, bad := range []string{"ANTHROPIC", "OPENAI", "SOMEVENDOR", "GARUDA", "GITHUB_TOKEN", "RANDOM_THING", "EVIL"} {
		if strings.Contains(joined, bad) {
			t.Errorf("%s passed into %v", bad, env)
		}
	}
	for _, want := range []string{"HOME=/h", "TMPDIR=/t", "GOCACHE=/c/go", "XDG_CACHE_HOME=/c", "LC_ALL=C.UTF-8"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %v", want, env)
		}
	}
	if !strings.Contains(joined, "PATH=") {
		t.Errorf("no PATH in %v", env)
	}
}
