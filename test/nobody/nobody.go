// Package nobody reruns a package's tests as the unprivileged user nobody, where the sandbox runs in a user
// namespace and with the limits an unprivileged user gets: the sandbox's properties are proved for both.
package nobody

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// Rerun reruns the tests of the running test binary that run matches as the user nobody (uid 65534), and fails
// unless they pass and each of wantPass is among them. It skips where the caller is not root (already
// unprivileged), and fails where setpriv is missing.
func Rerun(t *testing.T, run string, wantPass ...string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("already unprivileged")
	}
	testenv.NeedCommand(t, "setpriv", "util-linux")
	dir, err := os.MkdirTemp("", "gdn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	tmp := filepath.Join(dir, "t") // short: the harnesses bind unix sockets below it
	os.Mkdir(tmp, 0o777)
	os.Chmod(tmp, 0o1777)
	// A copy nobody can run: the test binary's own folder may be closed to it.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(exe))
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run", run, "-test.count=1", "-test.v", "-test.short="+strconv.FormatBool(testing.Short()))
	// The toolchains some tests run (go, npm, git) are found where nobody can reach them, whatever the caller's PATH.
	cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + tmp, "LANG=C.UTF-8"}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var summary []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "    ") {
			summary = append(summary, l)
		}
	}
	t.Logf("as nobody:\n%s", strings.Join(summary, "\n"))
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	for _, w := range wantPass {
		if !strings.Contains(string(out), "--- PASS: "+w) {
			t.Fatalf("%s did not run as nobody:\n%s", w, out)
		}
	}
}
