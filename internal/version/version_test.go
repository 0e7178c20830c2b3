package version

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnsupported: on a system other than Linux, both binaries print their version and refuse everything else
// with the reason and what to do, as docs/editors.md quotes.
func TestUnsupported(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"garuda", []string{"--version"}, 0, "garuda " + Version + " ("},
		{"garuda-exec", []string{"version"}, 0, "garuda-exec " + Version + " ("},
		{"garuda", []string{"acp"}, 1, "garuda: garuda acp runs on Linux only; on Windows use WSL"},
		{"garuda", []string{"setup"}, 1, "garuda: garuda runs its broker on Linux only; on Windows use WSL"},
		{"garuda", nil, 1, "garuda: garuda runs its broker on Linux only"},
		{"garuda-exec", []string{"serve"}, 1, "garuda-exec: garuda-exec needs Linux (Landlock, namespaces, seccomp, SO_PEERCRED)"},
		{"garuda-sandbox", []string{"--version"}, 0, "garuda-sandbox " + Version + " ("},
		{"garuda-sandbox", nil, 1, "garuda-sandbox: garuda-sandbox needs Linux"},
	} {
		var stdout, stderr bytes.Buffer
		code := Unsupported(c.name, c.args, &stdout, &stderr)
		got := stdout.String() + stderr.String()
		if code != c.code || !strings.HasPrefix(got, c.out) {
			t.Errorf("%s %v: exit %d, %q; want exit %d, %q...", c.name, c.args, code, got, c.code, c.out)
		}
		if (code == 0) != (stderr.Len() == 0) {
			t.Errorf("%s %v: a refusal goes to stderr, the version to stdout: %q / %q", c.name, c.args, stdout.String(), stderr.String())
		}
	}
}
