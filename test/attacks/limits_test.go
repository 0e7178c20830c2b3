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

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// allocArg makes the test binary a program that allocates and touches N MiB: $TESTBIN __alloc N.
const allocArg = "__alloc"

func allocate(mib string) int {
	n, err := strconv.Atoi(mib)
	if err != nil {
		return 2
	}
	var keep [][]byte
	for done := 0; done < n; done += 64 {
		b := make([]byte, min(64, n-done)<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
	fmt.Printf("allocated %d MiB\n", n)
	return 0
}

// flood is a command that allocates 2 GiB.
func flood(t *testing.T) string {
	exe, err := os.Executable()
	must(t, err)
	return exe + " " + allocArg + " 2048"
}

// With "limits": {"memory_mb": 1024} in team policy, a command that allocates 2 GiB fails with the limit named;
// while it runs, and after it was killed, the broker and another session keep answering. The negative control:
// with 4096 the same command succeeds.
func TestMemoryFloodIsContained(t *testing.T) {
	e := newEnv(t)
	setLimits := func(mb string) {
		must(t, os.WriteFile(filepath.Join(e.home, "policy.json"), []byte(`{"limits": {"memory_mb": `+mb+`}}`), 0o600))
	}
	setLimits("1024")
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
	st := start(t, c, cx, sid, bash("echo waiting; while [ ! -e release ]; do sleep 0.05; done; "+flood(t)))
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

	setLimits("4096") // read when a session opens
	res, _, err = run(t, start(t, c, cx, e.open(c), bash(flood(t)+" && echo done")), execv1.Choice_CHOICE_DENY)
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
