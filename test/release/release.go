// Package release says how the shipped binaries are built, so that the process tests and the benchmarks run what
// `make build` and `make install` produce. The Makefile's BUILD line carries the same settings; TestMakefileBuildsRelease
// keeps the two in step.
package release

import (
	"os"
	"os/exec"
)

// Tags are the build tags of a shipped binary. grpcnotrace leaves out golang.org/x/net/trace and with it
// html/template, whose reflection makes the linker keep every exported method of every linked type: garuda is about
// 11 MB smaller and garuda-exec about 5 MB.
const Tags = "grpcnotrace"

// CGO is the value of CGO_ENABLED for a shipped binary: static, with Go's own DNS resolver and user lookup. No libc
// is mapped, and the front end never needs to load an NSS module under its Landlock rules.
const CGO = "0"

// LDFlags are the -ldflags that stamp version into both binaries: `garuda --version`, `garuda-exec --version`, the
// broker's Hello and the agentInfo.version of ACP initialize. The Makefile's LDFLAGS line is LDFlags("$(VERSION)");
// TestMakefileBuildsRelease keeps the two in step.
func LDFlags(version string) string {
	return "-X github.com/garuda-dev/garuda/internal/version.Version=" + version
}

// Command returns the `go build` of pkgs into out (a file, or a folder for several packages) with the shipped
// settings; ldflags may be empty. dir is the module's root.
func Command(dir, ldflags, out string, pkgs ...string) *exec.Cmd {
	args := []string{"build", "-trimpath", "-tags", Tags}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	args = append(append(args, "-o", out), pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+CGO)
	return cmd
}
