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
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
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
	e := brokertest.New(t)
	must(t, os.WriteFile(filepath.Join(e.Home, "policy.json"), []byte(`{"limits": {"memory_mb": 4096}}`), 0o600))
	userSettings := filepath.Join(e.Home, "settings.json")
	must(t, os.WriteFile(userSettings, []byte(`{"limits": {"memory_mb": 1024}}`), 0o600))
	cx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // the flood is slow on a loaded machine
	defer cancel()
	c, other := e.Client(), e.Client()
	sid, osid := e.Open(c), e.Open(other)
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
		res, _, err := brokertest.Run(t, brokertest.Start(t, other, cx, osid, brokertest.Bash("echo alive")), execv1.Choice_CHOICE_DENY)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "alive") {
			t.Fatalf("%s: the other session's command: %v %v", when, res, err)
		}
	}
	st := brokertest.Start(t, c, cx, sid, brokertest.Bash("echo waiting; while [ ! -e release ]; do sleep 0.05; done; "+alloc(t, 2048)))
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
	must(t, os.WriteFile(filepath.Join(e.Root, "release"), nil, 0o644))
	res, _, err := brokertest.Run(t, st, execv1.Choice_CHOICE_DENY)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1024 MiB: %s", res.GetContent())
	if res.GetStatus() != execv1.Status_STATUS_FAILED || !strings.Contains(res.GetContent(), "memory limit reached (1024 MiB") {
		t.Errorf("2 GiB under memory_mb 1024: status %v, content %q", res.GetStatus(), res.GetContent())
	}
	answering("after the flood")

	must(t, os.Remove(userSettings)) // settings are read when a session opens
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, cx, e.Open(c), brokertest.Bash(alloc(t, 2048)+" && echo done")),
		execv1.Choice_CHOICE_DENY)
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
	e := brokertest.New(t)
	must(t, os.MkdirAll(filepath.Join(e.Root, ".garuda"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.Root, ".garuda", "settings.json"), []byte(`{"limits": {"memory_mb": 16}}`), 0o644))
	c := e.Client()
	r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: e.Root, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		t.Fatal(err)
	}
	want := `"limits" in ` + filepath.Join(e.Root, ".garuda", "settings.json") + " are ignored"
	if !strings.Contains(strings.Join(r.GetNotices(), "\n"), want) {
		t.Errorf("notices %q", r.GetNotices())
	}
	// A command that needs more than 16 MiB runs.
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.GetSessionId(), brokertest.Bash(alloc(t, 64))),
		execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Errorf("64 MiB with a project's memory_mb 16: %v %v", res, err)
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED (hang). A front end that starts calls and never reads their streams leaves the broker blocked in
// gRPC's Send (flow control) with no way out: the call's cancel does not reach a blocked Send, so CloseSession
// (and the broker's Shutdown, which waits for every call) waited for ever, with the front end still connected.
// Control: a client that reads gets its result and CloseSession returns.
func TestRedTeamUnreadStreamsBlockClose(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, "big.txt"), strings.Repeat("needle "+strings.Repeat("x", 230)+"\n", 1000))
	// The front end picks its own flow-control window: a fixed 64 KiB (no BDP growth) is smaller than a result.
	cc, err := grpc.NewClient("unix://"+e.Sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	c := execv1.NewExecServiceClient(cc)
	sid := e.Open(c)
	op := &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "needle", OutputMode: "content"}}}
	if res, _ := within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 5*time.Second); len(res.GetContent()) < 200<<10 {
		t.Fatalf("control: the result is small: %d bytes", len(res.GetContent()))
	}
	progress := brokertest.Bash("for i in $(seq 1 200); do head -c 20000 /dev/zero | tr '\\0' x; sleep 0.1; done")
	brokertest.Start(t, c, brokertest.Ctx(t), sid, op)       // never read
	brokertest.Start(t, c, brokertest.Ctx(t), sid, progress) // progress, never read
	time.Sleep(3 * time.Second)
	cx, cancel := context.WithTimeout(brokertest.Ctx(t), 5*time.Second)
	defer cancel()
	if _, err := c.CloseSession(cx, &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Errorf("CloseSession with unread calls: %v", err)
	}
	// Control: another session of the same client still works.
	sid2 := e.Open(c)
	if res, _ := within(t, c, sid2, op, execv1.Choice_CHOICE_ONCE, 5*time.Second); len(res.GetContent()) < 200<<10 {
		t.Fatalf("control: %v", res)
	}
	// The broker's shutdown with an unread command running.
	brokertest.Start(t, c, brokertest.Ctx(t), sid2, progress)
	time.Sleep(3 * time.Second)
	done := make(chan struct{})
	go func() { e.Svc.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("Shutdown waits for a call whose stream is not read")
	}
}

// openFDs counts the descriptors of this process (the broker runs in it).
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED (resource exhaustion). A client could open sessions without bound, and a session outlived its
// connection (only that connection may use it): on a serving broker each left its root and session file open
// until the broker stopped, so opening sessions and hanging up, again and again, ran the broker out of file
// descriptors for every user. Control: sessions open up to the bound, and again once the connection is gone.
func TestRedTeamSessionsExhaustTheBroker(t *testing.T) {
	e := brokertest.New(t)
	root := e.Root
	dial := func() (*grpc.ClientConn, execv1.ExecServiceClient) { return brokertest.Dial(t, e.Sock) }
	cc, c := dial()
	if _, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root}); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	opened := 1
	for ; opened < 1100; opened++ {
		_, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root})
		if status.Code(err) == codes.ResourceExhausted {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if opened >= 1100 {
		t.Errorf("%d sessions opened on one connection, holding %d descriptors", opened, openFDs(t)-before)
	}
	cc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for openFDs(t) > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := openFDs(t); n > before {
		t.Errorf("the sessions of a closed connection still hold %d descriptors", n-before)
	}
	_, c2 := dial()
	if _, err := c2.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root}); err != nil {
		t.Fatalf("control: a new connection cannot open a session: %v", err)
	}
}
