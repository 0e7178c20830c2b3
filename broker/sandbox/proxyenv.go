package sandbox

import "strings"

// proxyVars are the variables through which ordinary tools (curl, git, npm, pip, go, cargo) find an HTTP(S) proxy.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// ProxyEnv is env with the proxy variables pointing at the proxy at addr (host:port, on the command's own loopback),
// and NO_PROXY keeping the namespace's loopback direct; any proxy variables env had are dropped first.
func ProxyEnv(env []string, addr string) []string {
	out := make([]string, 0, len(env)+10)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "NODE_USE_ENV_PROXY":
			continue
		}
		out = append(out, kv)
	}
	for _, v := range proxyVars {
		out = append(out, v+"=http://"+addr)
	}
	// Node 24 reads the variables only with NODE_USE_ENV_PROXY (npm and yarn read them anyway).
	return append(out, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1", "NODE_USE_ENV_PROXY=1")
}
