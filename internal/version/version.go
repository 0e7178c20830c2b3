// Package version holds the version the binaries print, stamped at build time, and all that they do on a system
// other than Linux.
package version

import (
	"fmt"
	"io"
	"runtime"
)

// Version is the binaries' version, set at build time (test/release.LDFlags).
var Version = "0.16.0-dev"

// Unsupported is the whole of garuda, garuda-exec and garuda-sandbox (name) on a system other than Linux: `version`
// prints the version, anything else the reason they do not run there, with exit status 1. The broker's sandbox and peer
// checks need Landlock, namespaces, seccomp and SO_PEERCRED, and the front end is nothing without its broker; the
// release builds macOS and Windows archives only because the ACP Registry lists every system. Linking nothing else
// keeps those builds small and quick.
func Unsupported(name string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintf(stdout, "%s %s (%s/%s)\n", name, Version, runtime.GOOS, runtime.GOARCH)
		return 0
	}
	msg := "garuda runs its broker on Linux only; on Windows use WSL"
	switch {
	case name == "garuda-exec", name == "garuda-sandbox":
		msg = name + " needs Linux (Landlock, namespaces, seccomp, SO_PEERCRED) and refuses to act on " +
			runtime.GOOS + "; on Windows use WSL"
	case len(args) > 0 && args[0] == "acp":
		msg = "garuda acp runs on Linux only; on Windows use WSL"
	}
	fmt.Fprintln(stderr, name+": "+msg)
	return 1
}
