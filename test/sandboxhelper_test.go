package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	"github.com/garuda-dev/garuda/internal/testenv"
	"github.com/garuda-dev/garuda/internal/testproc"
	"github.com/garuda-dev/garuda/test/release"
)

// installDir is a folder with garuda and garuda-exec as make install leaves them (links to the built ones), and
// sandbox, when not empty, copied in as garuda-sandbox.
func installDir(t *testing.T, sandbox string) string {
	t.Helper()
	needBins(t)
	dir := openDir(t)
	files := map[string]string{"garuda": bins.garuda, "garuda-exec": bins.exec}
	if sandbox != "" {
		files["garuda-sandbox"] = sandbox
	}
	for name, src := range files {
		dst := filepath.Join(dir, name)
		if err := os.Link(src, dst); err != nil {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// parentOf is the parent of pid, from /proc/PID/stat.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid …: the command name may hold spaces, so read after its closing parenthesis.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// exeOf is the executable of pid (a sandbox's pid 1 is not dumpable: root, or the owner of its user namespace,
// may still read it).
func exeOf(t *testing.T, pid int) string {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// helperOfCommand runs `garuda run` from dir (as the user nobody if asked) with a sandboxed command that waits for
// a file, and returns, while it waits, the executables of its pid 1 and of the session network's holder ("" where
// there is none); then it lets the command end and checks that the run ends well.
func helperOfCommand(t *testing.T, dir string, nobody bool) (pid1, holder string) {
	t.Helper()
	marker := fmt.Sprintf("garuda-helper-%d", time.Now().UnixNano())
	in, _ := json.Marshal(map[string]string{"command": "exec -a " + marker + " sh -c 'until [ -e go ]; do sleep 0.02; done; echo waited'"})
	e := newRunEnv(t, fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{{ID: "b1", Name: "bash", Input: string(in)}}},
		fakeprovider.Turn{Text: "ok"})
	e.garuda = filepath.Join(dir, "garuda")
	if nobody {
		// Its home, project and temp folder are nobody's.
		models, err := os.ReadFile(filepath.Join(e.home, "models.json"))
		if err != nil {
			t.Fatal(err)
		}
		e.home, e.root = openDir(t), openDir(t)
		tmp := openDir(t)
		if err := os.WriteFile(filepath.Join(e.home, "models.json"), models, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{e.home, filepath.Join(e.home, "models.json"), e.root, tmp} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		e.env = append(e.env, "TMPDIR="+tmp)
	}
	cmd := e.command("--json", "wait")
	if nobody {
		testenv.NeedCommand(t, "setpriv", "util-linux")
		path, _ := exec.LookPath("setpriv")
		cmd.Path = path
		cmd.Args = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", e.garuda}, cmd.Args[1:]...)
	}
	var out testproc.Output
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if err := os.WriteFile(filepath.Join(e.root, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("garuda run: %v\n%s", err, &out)
			}
		case <-time.After(waitLimit):
			cmd.Process.Kill()
			t.Errorf("garuda run did not end\n%s", &out)
		}
		if !e.provider.LastBodyContains("waited") {
			t.Errorf("the model did not get the command's output\n%s", &out)
		}
	}()
	testproc.WaitLive(t, waitLimit, marker)
	p1 := parentOf(t, testproc.Live(marker)[0].PID)
	pid1 = exeOf(t, p1)
	// Started through a descriptor (/proc/self/fd/N), it would be named "N" in ps and top.
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p1)); string(comm) != "garuda-sandbox\n" {
		t.Errorf("the command's pid 1 is named %q in ps, want garuda-sandbox", comm)
	}
	up := parentOf(t, p1)
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", up)); strings.Contains(string(cmdline), "\x00holder\x00") {
		holder = exeOf(t, up)
	}
	t.Logf("pid 1 runs %s, the holder %q", pid1, holder)
	return pid1, holder
}

// doctorRow is the row name of garuda doctor's output doc, its cells joined by single spaces ("" where it has none).
func doctorRow(doc, name string) string {
	for l := range strings.Lines(doc) {
		if rest, ok := strings.CutPrefix(l, name+" "); ok {
			return strings.Join(strings.Fields(rest), " ")
		}
	}
	return ""
}

// doctorOf is garuda doctor's output, run from dir.
func doctorOf(t *testing.T, dir string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(filepath.Join(dir, "garuda"), "doctor")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home, "TMPDIR=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("garuda doctor: %v\n%s", err, out)
	}
	return string(out)
}

// Installed as make install leaves it, a sandboxed command's pid 1, and its session network's holder, are
// garuda-sandbox, not the broker re-executed, for a broker run as root and as nobody; garuda doctor says which
// helper runs (issue 21).
func TestProcessSandboxHelperIsGarudaSandbox(t *testing.T) {
	dir := installDir(t, bins.sandbox)
	want := filepath.Join(dir, "garuda-sandbox")
	for _, nobody := range []bool{false, os.Getuid() == 0} { // as root, and as nobody (in user namespaces)
		pid1, holder := helperOfCommand(t, dir, nobody)
		if pid1 != want {
			t.Errorf("the command's pid 1 runs %s, want %s (as nobody: %v)", pid1, want, nobody)
		}
		if holder != "" && holder != want {
			t.Errorf("the session network's holder runs %s, want %s (as nobody: %v)", holder, want, nobody)
		}
	}
	if doc := doctorOf(t, dir); !strings.HasPrefix(doctorRow(doc, "sandbox helper"), "yes "+want+" (garuda-sandbox ") {
		t.Errorf("garuda doctor does not name garuda-sandbox as the helper:\n%s", doc)
	}
	out, err := exec.Command(want, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "garuda-sandbox ") {
		t.Errorf("garuda-sandbox --version: %q %v", out, err)
	}
}

// Without garuda-sandbox beside it (garuda-exec copied alone), the broker is its own helper, as before: commands
// run, and garuda doctor says so and why.
func TestProcessSandboxHelperFallback(t *testing.T) {
	dir := installDir(t, "")
	pid1, holder := helperOfCommand(t, dir, false)
	want := filepath.Join(dir, "garuda-exec")
	if pid1 != want || holder != "" && holder != want {
		t.Errorf("the command's pid 1 runs %s and its holder %q, want %s", pid1, holder, want)
	}
	doc := doctorOf(t, dir)
	row := doctorRow(doc, "sandbox helper")
	if !strings.HasPrefix(row, "yes garuda-exec itself: no garuda-sandbox beside garuda-exec ("+filepath.Join(dir, "garuda-sandbox")+")") ||
		!strings.Contains(row, "slower") || doctorRow(doc, "commands") != "will run in the sandbox" {
		t.Errorf("garuda doctor does not say that garuda-exec is its own helper, why, and that commands run:\n%s", doc)
	}
}

// A garuda-sandbox of another build beside garuda-exec is refused: no command runs, the model (and so the user)
// gets why and what to do, and garuda doctor says that commands are refused.
func TestProcessSandboxHelperOfAnotherBuildRefused(t *testing.T) {
	needBins(t)
	other := filepath.Join(t.TempDir(), "garuda-sandbox")
	ld := "-X github.com/garuda-dev/garuda/internal/version.Version=0.0.1-other"
	if out, err := release.Command("..", ld, other, "./cmd/garuda-sandbox").CombinedOutput(); err != nil {
		t.Fatalf("build another garuda-sandbox: %v\n%s", err, out)
	}
	dir := installDir(t, other)
	in, _ := json.Marshal(map[string]string{"command": "touch ran"})
	e := newRunEnv(t, fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{{ID: "b1", Name: "bash", Input: string(in)}}},
		fakeprovider.Turn{Text: "ok"})
	e.garuda = filepath.Join(dir, "garuda")
	code, stdout, stderr := e.run("--json", "touch")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.root, "ran")); err == nil {
		t.Fatal("the command ran with a helper of another build")
	}
	for _, s := range []string{filepath.Join(dir, "garuda-sandbox") + " is garuda-sandbox 0.0.1-other", "nothing was run",
		"make install"} {
		if !e.provider.LastBodyContains(s) {
			t.Errorf("the model was not told %q:\n%s", s, e.provider.Bodies()[len(e.provider.Bodies())-1])
		}
	}
	doc := doctorOf(t, dir)
	if !strings.HasPrefix(doctorRow(doc, "sandbox helper"), "no the sandbox helper "+filepath.Join(dir, "garuda-sandbox")) ||
		!strings.HasPrefix(doctorRow(doc, "commands"), "REFUSED") {
		t.Errorf("garuda doctor does not say that the helper is refused, and commands with it:\n%s", doc)
	}
}
