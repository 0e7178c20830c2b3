// Package testenv is what tests need of the machine: the commands they run, a memory cgroup of their own, a loopback
// server to reach. A test whose command is missing fails, naming the Debian package that has it (.ci/run installs
// them); it never skips, so that a check cannot silently stop running.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NeedCommand returns the path of the command name, found on PATH or in /usr/sbin and /sbin, or fails the test.
func NeedCommand(t testing.TB, name, debianPackage string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s is not installed: install the Debian package %s (.ci/run does)", name, debianPackage)
	return ""
}
