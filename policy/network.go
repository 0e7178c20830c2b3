package policy

import (
	"fmt"
	"net/netip"
	"strings"
)

// PackageRegistries is the built-in allowlist: the package registries of the languages Garuda supports, reachable
// by web_fetch and by sandboxed commands (npm install, go mod download, pip install, cargo fetch…) without a
// question. Team policy's network_allowlist and deny rules still apply; "package_registries": false in any
// settings or policy file turns the list off. An entry never opens a private address (see Decision.OpensPrivate).
var PackageRegistries = []string{
	"proxy.golang.org", "sum.golang.org", "index.golang.org", // Go
	"registry.npmjs.org", "registry.yarnpkg.com", // JavaScript
	"pypi.org", "files.pythonhosted.org", // Python
	"crates.io", "static.crates.io", "index.crates.io", // Rust
	"rubygems.org", "index.rubygems.org", // Ruby
	"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", // Java, Kotlin
	"api.nuget.org",      // .NET
	"repo.packagist.org", // PHP
}

// RegistriesAllowed reports whether the built-in allowlist of package registries applies: no settings or policy
// file turned it off (turning it off only tightens, so a project's file may too, trusted or not).
func RegistriesAllowed(st *State) bool {
	if st == nil {
		return false
	}
	for _, s := range []*Settings{st.Team, st.User, st.Project} {
		if s != nil && s.PackageRegistries != nil && !*s.PackageRegistries {
			return false
		}
	}
	return true
}

// namesHost reports whether a network or web_fetch rule names one exact host (no "*", not every host).
func (r *Rule) namesHost() bool {
	return (r.tool == OpNetwork || r.tool == OpWebFetch) && !r.all && r.host != "" && !strings.HasPrefix(r.host, "*.")
}

// NormHost returns the canonical spelling of a network host as rules are matched against it (lower case, no
// trailing dot, an IP literal canonical and unmapped), or false when it is no host name or IP address.
func NormHost(h string) (string, bool) {
	n, ok := normHostPattern(h)
	if !ok || strings.HasPrefix(n, "*.") {
		return "", false
	}
	return n, true
}

// IsIPLiteral reports whether a normalised host is an IP address.
func IsIPLiteral(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

// NetworkHint says, for a network request that was denied, how the host could be allowed: the words a 403 of the
// proxy or a denied web_fetch ends with.
func NetworkHint(req Request, d Decision) string {
	tool := OpNetwork
	if req.Tool == OpWebFetch {
		tool = OpWebFetch
	}
	switch {
	case strings.HasPrefix(d.Rule, "team policy"):
		return "team policy decides this host; ask whoever manages it (/etc/garuda/policy.json or $GARUDA_HOME/policy.json)"
	case strings.HasPrefix(d.Rule, "mode"), d.Rule == "default" && d.Verdict == Deny:
		return ""
	case d.Verdict == Deny && strings.Contains(d.Rule, ": "):
		return fmt.Sprintf("remove the rule %q if it should be reachable", strings.SplitN(d.Rule, ": ", 2)[1])
	}
	return fmt.Sprintf(`to allow it, add "%s(domain:%s)" to "permissions.allow" in $GARUDA_HOME/settings.json, `+
		`or answer "Allow for this session" when Garuda asks during a prompt`, tool, req.Host)
}
