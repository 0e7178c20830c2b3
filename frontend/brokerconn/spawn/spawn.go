// Package spawn starts garuda-exec: the front end's one way to start a process. For `garuda acp` and `garuda run` it
// does so from its own package initialisation, before main: it imports only os and syscall, so Go initialises it
// right after os, before the model SDKs, grpc, protobuf and crypto (most of the front end's start), and the broker
// starts beside them instead of after them. brokerconn takes that broker (Take), or starts one itself. (Go
// initialises the first package, by import path, whose imports are initialised: an import such as strings or
// path/filepath, which sort late, would hold it back behind every package that sorts before it, the crypto
// packages among them: strings alone put the broker's start 0.5–1.5 ms later.)
package spawn

import "os"

// ExecName is the broker's executable name.
const ExecName = "garuda-exec"

// Early is the broker started at initialisation.
type Early struct {
	Path string
	Pid  int      // its process: Process(Pid)
	Conn *os.File // the front end's end of the socketpair
	// OwnGroup: started in a process group of its own.
	OwnGroup bool
}

var early *Early

// Started reports whether a broker was started at initialisation and not yet taken.
func Started() bool { return early != nil }

// Take returns the broker started at initialisation, once, or nil.
func Take() *Early {
	e := early
	early = nil
	return e
}

// Beside returns garuda-exec beside the running executable, if it is there and executable.
func Beside() (string, bool) {
	self, err := os.Executable()
	if err != nil {
		return "", false
	}
	i := len(self) - 1
	for i >= 0 && self[i] != os.PathSeparator {
		i--
	}
	p := self[:i+1] + ExecName
	return p, Executable(p)
}

// Executable reports whether p is a regular file someone may execute.
func Executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// BrokerEnv is the front end's environment less the provider keys: the broker reads its own configuration, and
// keys that are never in its environment cannot leak from it.
func BrokerEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name := before(kv, '=')
		if hasSuffix(name, "_API_KEY") || hasSuffix(name, "_AUTH_TOKEN") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// before is s up to its first c, or all of s (strings.Cut's first result; see the package doc for why not strings).
func before(s string, c byte) string {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i]
		}
	}
	return s
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

func hasSuffix(s, p string) bool { return len(s) >= len(p) && s[len(s)-len(p):] == p }
