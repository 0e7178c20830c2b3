// Which program runs the helper (garuda-sandbox beside the broker, or the broker itself), and the build check of
// every helper's start.

package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	must(t, err)
	must(t, os.WriteFile(dst, data, mode))
	must(t, os.Chmod(dst, mode))
}

// garuda-sandbox is used when it is there and may run; absent, the broker is its own helper, and a file that is
// there but may not run refuses every start (fail closed) with its path and what to do.
func TestResolveHelper(t *testing.T) {
	dir := t.TempDir()
	trueBin, err := exec.LookPath("true")
	must(t, err)
	self, err := os.Stat("/proc/self/exe")
	must(t, err)

	missing := resolveHelper(filepath.Join(dir, "none"))
	if !missing.own || missing.err != nil || missing.path != "/proc/self/exe" || !strings.Contains(missing.why, "no garuda-sandbox beside") {
		t.Errorf("absent: %+v, want the broker itself and why", missing)
	}

	good := filepath.Join(dir, "good")
	copyFile(t, trueBin, good, 0o755)
	p := resolveHelper(good)
	if p.own || p.err != nil || p.file != good {
		t.Fatalf("an executable file: %+v", p)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(p.path, "/proc/self/fd/"))
	if err != nil || n < helperMinFD {
		t.Errorf("run through %q, want a descriptor of at least %d", p.path, helperMinFD)
	}
	flags, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor %d: flags %d, %v; want close-on-exec (no command inherits it)", n, flags, err)
	}

	bad := []struct {
		name string
		mode os.FileMode
		want string
	}{
		{"not-executable", 0o644, "not an executable file"},
		{"others-write", 0o757, "writable by others"},
	}
	if self.Mode()&0o020 == 0 {
		bad = append(bad, struct {
			name string
			mode os.FileMode
			want string
		}{"group-write", 0o775, "writable by its group"})
	}
	for _, c := range bad {
		f := filepath.Join(dir, c.name)
		copyFile(t, trueBin, f, c.mode)
		if p := resolveHelper(f); p.err == nil || !strings.Contains(p.err.Error(), c.want) ||
			!strings.Contains(p.err.Error(), f) || !strings.Contains(p.err.Error(), "make install") {
			t.Errorf("%s: %+v, want refused: %s, naming the file and what to do", c.name, p, c.want)
		}
	}
	if p := resolveHelper(dir); p.err == nil || !strings.Contains(p.err.Error(), "not an executable file") {
		t.Errorf("a folder: %+v, want refused", p)
	}
	if os.Geteuid() == 0 {
		f := filepath.Join(dir, "other-owner")
		copyFile(t, trueBin, f, 0o755)
		must(t, os.Chown(f, 65534, 65534))
		if p := resolveHelper(f); p.err == nil || !strings.Contains(p.err.Error(), "owned by uid 65534") {
			t.Errorf("owned by another user: %+v, want refused", p)
		}
	}
}

// What runs is the file that was checked, though the path is replaced afterwards (an upgrade, or a swap between
// the check and a start). Control: the path itself now names the other program.
func TestHelperRunsTheFileChecked(t *testing.T) {
	dir := t.TempDir()
	trueBin, err := exec.LookPath("true")
	must(t, err)
	falseBin, err := exec.LookPath("false")
	must(t, err)
	path := filepath.Join(dir, HelperName)
	copyFile(t, trueBin, path, 0o755)
	p := resolveHelper(path)
	if p.err != nil || p.own {
		t.Fatal(p)
	}
	other := filepath.Join(dir, "other")
	copyFile(t, falseBin, other, 0o755)
	must(t, os.Rename(other, path))
	if err := exec.Command(p.path).Run(); err != nil {
		t.Errorf("the checked file (true) through %s: %v", p.path, err)
	}
	if err := exec.Command(path).Run(); err == nil {
		t.Errorf("control: %s is now false, yet it exited 0", path)
	}
}

// A helper started by a broker of another build refuses before it reads anything: the command never runs, the
// error names the helper and what to do, for a command in its own namespaces and through a session's network,
// and the probe reports it. Control: with this build's token the same command runs.
func TestHelperRefusesAnotherBuild(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.root, "ran")
	spec := f.spec("touch " + marker)
	defer func() { brokerToken = helperToken }()
	brokerToken = func() string { return "0.0/another-build" }

	_, err := Run(context.Background(), spec)
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "another-build (sandbox protocol 0.0)") ||
		!strings.Contains(err.Error(), "nothing was run") || !strings.Contains(err.Error(), "make install") {
		t.Errorf("Run with another build's helper: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
	_, err = NewNetwork()
	if err == nil || !strings.Contains(err.Error(), "nothing was run") {
		t.Errorf("NewNetwork with another build's helper: %v", err)
	}
	var row Feature
	rep := Probe()
	for _, r := range rep.Features {
		if r.Name == HelperFeature {
			row = r
		}
	}
	if row.Enforced || !strings.Contains(row.Detail, "another-build") || len(rep.Missing()) == 0 {
		t.Errorf("Probe with another build's helper: %+v", rep.Features)
	}
	// A helper run by hand with no token refuses too.
	cmd := exec.Command("/proc/self/exe", HelperArg, "probe")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); cmd.ProcessState.ExitCode() != refusedExit || !strings.Contains(stderr.String(), "unknown build") {
		t.Errorf("a helper with no token: %v, %q", err, stderr.String())
	}

	brokerToken = helperToken
	n, err := NewNetwork()
	must(t, err)
	defer n.Close()
	for _, net := range []*Network{nil, n} {
		os.Remove(marker)
		spec.Network = net
		if res, err := Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
			t.Fatalf("control (network %v): %v %+v", net != nil, err, res)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("control (network %v): the command did not run: %v", net != nil, err)
		}
	}
}

// The refusal goes where the stage's broker reads first: the init's status pipe (fd 4), the holder's socket (fd 3).
func TestHelperRefusalOnEachChannel(t *testing.T) {
	for _, stage := range []string{"init", "holder"} {
		r, w, err := os.Pipe()
		must(t, err)
		var extra []*os.File
		if stage == "init" {
			extra = []*os.File{os.Stdin, w} // fd 3: a spec pipe it never reads; fd 4: the status pipe
		} else {
			pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			must(t, err)
			r.Close()
			w.Close()
			r, w = os.NewFile(uintptr(pair[0]), "broker"), os.NewFile(uintptr(pair[1]), "holder")
			extra = []*os.File{w}
		}
		cmd := exec.Command("/proc/self/exe")
		cmd.Args = helperArgv(stage, "9.0/old")
		cmd.ExtraFiles = extra
		cmd.Env = helperEnv
		must(t, cmd.Start())
		w.Close()
		data := make([]byte, 4096)
		k, _ := io.ReadAtLeast(r, data, 1)
		r.Close()
		err = cmd.Wait()
		if cmd.ProcessState.ExitCode() != refusedExit || !strings.Contains(string(data[:k]), "old (sandbox protocol 9.0)") {
			t.Errorf("%s: %v, read %q", stage, err, data[:k])
		}
	}
}

// Found where Garuda is installed in the project (or the home folder is the project): a command cannot change
// garuda-sandbox, which the broker runs as the next command's pid 1 outside the command's confinement: not in
// place, not through a hard link, not by moving it away. Control: a file beside it, in the same folder, is written.
func TestAttackHelperInTheRoot(t *testing.T) {
	f := newFixture(t)
	bin := filepath.Join(f.root, "bin")
	must(t, os.Mkdir(bin, 0o755))
	path := filepath.Join(bin, HelperName)
	copyFile(t, "/proc/self/exe", path, 0o755) // this test binary is a helper too (TestMain)
	p := resolveHelper(path)
	if p.err != nil || p.own {
		t.Fatal(p)
	}
	defer func(old func() helperProgram) { helperProg = old }(helperProg)
	helperProg = func() helperProgram { return p }
	before, err := os.ReadFile(path)
	must(t, err)
	res := f.sandboxed("cd bin; echo evil > " + HelperName + "; echo $? wrote; ln " + HelperName + " x && echo evil > x; " +
		"mv " + HelperName + " y; echo control > other; ls")
	after, err := os.ReadFile(path)
	must(t, err)
	if string(after) != string(before) {
		t.Fatalf("the command changed garuda-sandbox:\n%s", res.Output)
	}
	if got, _ := os.ReadFile(filepath.Join(bin, "other")); string(got) != "control\n" {
		t.Fatalf("control: the file beside garuda-sandbox was not written, so the test shows nothing:\n%s", res.Output)
	}
	if res := f.sandboxed("echo next"); !strings.Contains(string(res.Output), "next") {
		t.Errorf("the next command, through the same helper: %+v", res)
	}
}

// Garuda built or installed in the project (its own repository, with the editor pointed at bin/garuda): a command
// cannot change garuda-exec or garuda, which run at the next start outside any sandbox, as the user. Control: a
// file beside them is written.
func TestAttackOwnProgramsInTheRoot(t *testing.T) {
	f := newFixture(t)
	bin := filepath.Join(f.root, "bin")
	must(t, os.Mkdir(bin, 0o755))
	progs := []string{filepath.Join(bin, "garuda-exec"), filepath.Join(bin, "garuda")}
	for _, p := range progs {
		must(t, os.WriteFile(p, []byte("#!/bin/sh\necho the real program\n"), 0o755))
	}
	defer func(old func() []string) { brokerPrograms = old }(brokerPrograms)
	brokerPrograms = func() []string { return progs }
	res := f.sandboxed("cd bin; for p in garuda-exec garuda; do echo 'echo evil' > $p; mv $p $p.old; done; " +
		"echo control > other; ls")
	for _, p := range progs {
		if got, _ := os.ReadFile(p); string(got) != "#!/bin/sh\necho the real program\n" {
			t.Errorf("the command changed %s: %q\n%s", p, got, res.Output)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(bin, "other")); string(got) != "control\n" {
		t.Fatalf("control: the file beside them was not written, so the test shows nothing:\n%s", res.Output)
	}
}
