package attacks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// allocArg makes the test binary a program that allocates and touches N MiB: $TESTBIN __alloc N.
const allocArg = "__alloc"

func allocate(mib string) int {
	n, err := strconv.Atoi(mib)
	if err != nil {
		return 2
	}
	// Mapped outside the Go heap, so that a -race build touches no shadow memory for it.
	var keep [][]byte
	for done := 0; done < n; done += 64 {
		b, err := unix.Mmap(-1, 0, min(64, n-done)<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			fmt.Printf("after %d MiB: %v\n", done, err)
			return 1
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
	fmt.Printf("allocated %d MiB\n", n)
	return 0
}

// alloc is a command that allocates mib MiB.
func alloc(t *testing.T, mib int) string {
	exe, err := os.Executable()
	must(t, err)
	return exe + " " + allocArg + " " + strconv.Itoa(mib)
}

// With "limits": {"memory_mb": 1024} in the user's settings (team policy says 4096: the tightest wins), a command
// that allocates 2 GiB fails with the limit named; while it runs, and after it was killed, the broker and another
// session keep answering. The negative control: with team policy's 4096 alone the same command succeeds.
func TestMemoryFloodIsContained(t *testing.T) {
	e := newEnv(t)
	must(t, os.WriteFile(filepath.Join(e.home, "policy.json"), []byte(`{"limits": {"memory_mb": 4096}}`), 0o600))
	userSettings := filepath.Join(e.home, "settings.json")
	must(t, os.WriteFile(userSettings, []byte(`{"limits": {"memory_mb": 1024}}`), 0o600))
	cx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // the flood is slow on a loaded machine
	defer cancel()
	c, other := e.client(), e.client()
	sid, osid := e.open(c), e.open(other)
	answering := func(when string) {
		t.Helper()
		h, err := c.Hello(cx, &execv1.HelloRequest{})
		if err != nil {
			t.Fatalf("%s: Hello: %v", when, err)
		}
		memory := false
		for _, f := range h.GetSandbox() {
			memory = memory || f.GetName() == "memory limit" && f.GetEnforced() && strings.Contains(f.GetDetail(), "MiB")
		}
		if !memory {
			t.Errorf("%s: Hello does not say how memory is limited: %v", when, h.GetSandbox())
		}
		res, _, err := run(t, start(t, other, cx, osid, bash("echo alive")), execv1.Choice_CHOICE_DENY)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "alive") {
			t.Fatalf("%s: the other session's command: %v %v", when, res, err)
		}
	}
	st := start(t, c, cx, sid, bash("echo waiting; while [ ! -e release ]; do sleep 0.05; done; "+alloc(t, 2048)))
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if m.GetResult() != nil {
			t.Fatalf("the command ended before the flood: %v", m.GetResult())
		}
		if strings.Contains(string(m.GetProgress().GetOutput()), "waiting") {
			break
		}
	}
	answering("while the command runs")
	must(t, os.WriteFile(filepath.Join(e.root, "release"), nil, 0o644))
	res, _, err := run(t, st, execv1.Choice_CHOICE_DENY)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1024 MiB: %s", res.GetContent())
	if res.GetStatus() != execv1.Status_STATUS_FAILED || !strings.Contains(res.GetContent(), "memory limit reached (1024 MiB") {
		t.Errorf("2 GiB under memory_mb 1024: status %v, content %q", res.GetStatus(), res.GetContent())
	}
	answering("after the flood")

	must(t, os.Remove(userSettings)) // settings are read when a session opens
	res, _, err = run(t, start(t, c, cx, e.open(c), bash(alloc(t, 2048)+" && echo done")), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "done") {
		t.Errorf("negative control: 2 GiB under memory_mb 4096: %v %v", res, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A project's settings cannot set the limits of the user's commands: the session says they are ignored.
func TestProjectLimitsAreIgnored(t *testing.T) {
	e := newEnv(t)
	must(t, os.MkdirAll(filepath.Join(e.root, ".garuda"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.root, ".garuda", "settings.json"), []byte(`{"limits": {"memory_mb": 16}}`), 0o644))
	c := e.client()
	r, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: e.root, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		t.Fatal(err)
	}
	want := `"limits" in ` + filepath.Join(e.root, ".garuda", "settings.json") + " are ignored"
	if !strings.Contains(strings.Join(r.GetNotices(), "\n"), want) {
		t.Errorf("notices %q", r.GetNotices())
	}
	// A command that needs more than 16 MiB runs.
	res, _, err := run(t, start(t, c, ctx(t), r.GetSessionId(), bash(alloc(t, 64))), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Errorf("64 MiB with a project's memory_mb 16: %v %v", res, err)
	}
}
