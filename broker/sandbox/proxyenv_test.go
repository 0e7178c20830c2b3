package sandbox

import (
	"slices"
	"testing"
)

// ProxyEnv points every usual variable at the proxy, keeps the loopback direct, and drops what env had of them.
func TestProxyEnv(t *testing.T) {
	env := ProxyEnv([]string{"PATH=/bin", "HTTPS_PROXY=http://evil:1", "no_proxy=*", "HOME=/h"}, "127.0.0.1:41234")
	for _, want := range []string{"PATH=/bin", "HOME=/h", "HTTP_PROXY=http://127.0.0.1:41234", "HTTPS_PROXY=http://127.0.0.1:41234",
		"https_proxy=http://127.0.0.1:41234", "ALL_PROXY=http://127.0.0.1:41234", "NO_PROXY=localhost,127.0.0.1,::1",
		"no_proxy=localhost,127.0.0.1,::1"} {
		if !slices.Contains(env, want) {
			t.Errorf("missing %s in %q", want, env)
		}
	}
	for _, bad := range []string{"HTTPS_PROXY=http://evil:1", "no_proxy=*"} {
		if slices.Contains(env, bad) {
			t.Errorf("kept %s", bad)
		}
	}
}
