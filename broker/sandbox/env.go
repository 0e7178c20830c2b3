package sandbox

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// passEnv are the broker's variables a command may inherit; everything else (provider keys, tokens, GARUDA_*) is
// dropped. Allowlisting defends against leaking credentials kept in the environment to a command.
var passEnv = map[string]bool{
	"PATH": true, "LANG": true, "LANGUAGE": true, "TERM": true, "USER": true, "LOGNAME": true, "TZ": true,
	"SHELL": true, "COLORTERM": true, "NO_COLOR": true, "EDITOR": true, "VISUAL": true, "PAGER": true,
	"GOROOT": true, "GOPATH": true, "GOMODCACHE": true, "GOFLAGS": true, "GOTOOLCHAIN": true,
	"JAVA_HOME": true, "CARGO_HOME": true, "RUSTUP_HOME": true, "NVM_DIR": true, "PYENV_ROOT": true,
}

// secretName matches variable names that may carry credentials; they never pass, whatever the caller asks.
var secretName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^GARUDA_|API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_AUTH|^AWS_|^AZURE_|^GOOGLE_APPLICATION)`)
})

// BaseEnv builds a command's environment from the broker's own with an allowlist: PATH, LANG, LC_*, TERM, USER…
// HOME and TMPDIR (with TMP and TEMP) are set to home and tmpdir; cacheDirs maps variable names (XDG_CACHE_HOME,
// GOCACHE, npm_config_cache, PIP_CACHE_DIR, …) to the session's cache folders. Names that look like credentials
// are dropped even from cacheDirs.
func BaseEnv(home, tmpdir string, cacheDirs map[string]string) []string {
	vals := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || secretName().MatchString(k) {
			continue
		}
		if passEnv[k] || strings.HasPrefix(k, "LC_") {
			vals[k] = v
		}
	}
	if vals["PATH"] == "" {
		vals["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	if vals["TERM"] == "" {
		vals["TERM"] = "dumb"
	}
	if home != "" {
		vals["HOME"] = home
	}
	if tmpdir != "" {
		vals["TMPDIR"], vals["TMP"], vals["TEMP"] = tmpdir, tmpdir, tmpdir
	}
	for k, v := range cacheDirs {
		if k == "" || strings.ContainsAny(k, "=\x00") || secretName().MatchString(k) {
			continue
		}
		vals[k] = v
	}
	out := make([]string, 0, len(vals))
	for k, v := range vals {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
