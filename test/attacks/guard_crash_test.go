package attacks

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker"
	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	"github.com/garuda-dev/garuda/internal/testproc"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// brokerArg makes this test binary a broker process (serveBroker): one that a test can SIGKILL.
const brokerArg = "-garuda-test-broker"

// serveBroker serves a broker on the socket sock for the GARUDA_HOME home until it is killed.
func serveBroker(sock, home string) int {
	svc := broker.NewService(broker.Config{Home: home, ManagedPolicy: filepath.Join(home, "managed.json"), Version: "test"})
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := broker.NewServer(svc, []uint32{uint32(os.Getuid())}).Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 1
}

// startBroker starts this binary as a broker process in dir (its socket, and GARUDA_HOME dir/home) and connects.
func startBroker(t *testing.T, dir, name string) (*exec.Cmd, execv1.ExecServiceClient) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, name+".sock")
	cmd := exec.Command(exe, brokerArg, sock, filepath.Join(dir, "home"))
	cmd.Env = append(os.Environ(), "GARUDA_HOME="+filepath.Join(dir, "home"))
	out := &testproc.Output{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-waited
		if t.Failed() {
			t.Logf("broker %s:\n%s", name, out.String())
		}
	})
	// The socket's file is there from its bind, before the listen: wait for a connection to be taken.
	for i := 0; i < 500; i++ {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, c := brokertest.Dial(t, sock)
	return cmd, c
}

// crashProject is a folder for brokers started by startBroker (their sockets, and GARUDA_HOME dir/home) and the
// project root they share.
func crashProject(t *testing.T) (dir, root string) {
	dir = t.TempDir()
	root = filepath.Join(dir, "project")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(filepath.Join(dir, "home"), 0o700)
	return dir, root
}

// openBuild opens a build-mode session in root.
func openBuild(t *testing.T, c execv1.ExecServiceClient, root string) *execv1.OpenSessionResponse {
	t.Helper()
	r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A broker is SIGKILLed while a sandboxed command it runs has planted a nested repository with core.fsmonitor and
// sleeps: the check after the command never happens. The next broker's session in the same root undoes the plant
// before anything runs, from the scan before the run that the dead broker kept on disk, and says so; the user's git
// status then runs nothing. Control: without that file (removed before the next broker starts), the next session
// takes the plant for the user's own and git runs it.
func TestGuardUndoesWhatAKilledBrokersRunLeft(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	for _, kept := range []bool{true, false} {
		t.Run(fmt.Sprintf("kept=%v", kept), func(t *testing.T) { killedBrokerRun(t, kept) })
	}
}

func killedBrokerRun(t *testing.T, kept bool) {
	dir, root := crashProject(t)
	setup(t, root, "git init -q && echo x > f && git add f && git commit -qm init")

	b1, c1 := startBroker(t, dir, "first")
	r := openBuild(t, c1, root)
	sleep := fmt.Sprintf("sleep 63.%d", os.Getpid()%1000)
	cx, cancel := context.WithCancel(brokertest.Ctx(t))
	defer cancel()
	brokertest.Start(t, c1, cx, r.GetSessionId(), brokertest.Bash(ident+planter("fsm")+
		`git init -q nested && git -C nested config core.fsmonitor "$PWD/fsm" && touch planted && `+sleep))
	for i := 0; i < 1000 && !brokertest.Exists(filepath.Join(root, "planted")); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !brokertest.Exists(filepath.Join(root, "planted")) {
		t.Fatal("the command did not plant")
	}
	pending, _ := filepath.Glob(filepath.Join(dir, "home", "guard", "*", "*.json"))
	if len(pending) != 1 {
		t.Fatalf("pending runs on disk while the command runs: %v", pending)
	}
	if err := b1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testproc.WaitNoneLive(t, 10*time.Second, sleep) // the command died with its broker
	if !kept {
		os.Remove(pending[0])
	}

	_, c2 := startBroker(t, dir, "second")
	r2 := openBuild(t, c2, root)
	notices := strings.Join(r2.GetNotices(), "\n")
	asUser(t, filepath.Join(root, "nested"), "status")
	ran := brokertest.Exists(filepath.Join(root, "nested", "PWNED"))
	if kept {
		if ran {
			t.Errorf("git ran what the killed broker's command planted; notices:\n%s", notices)
		}
		if !strings.Contains(notices, "core.fsmonitor") || !strings.Contains(notices, "earlier Garuda ended during it") {
			t.Errorf("the session does not say what it undid:\n%s", notices)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "home", "guard", "*", "*.json")); len(left) != 0 {
			t.Errorf("the pending run is still there after its check: %v", left)
		}
		recs := brokertest.AuditRecords(t, filepath.Join(dir, "home"))
		found := false
		for _, rec := range recs {
			found = found || rec.Event == "guard_undone" && rec.Op == "guard_recover" && strings.Contains(rec.Detail["undone"], "fsmonitor")
		}
		if !found {
			t.Errorf("no audit record of the undoing")
		}
	} else if !ran {
		t.Errorf("control: without the pending run git did not run the plant (notices %q)", notices)
	}
}

// A live broker's pending run is never checked by another broker in the same root (two editors): the lock says it
// is alive. The second session opens while the first broker's command runs and undoes nothing; the first's own
// check after the command then undoes the plant.
func TestGuardLeavesALiveBrokersPendingRun(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	dir, root := crashProject(t)
	setup(t, root, "git init -q")
	_, c1 := startBroker(t, dir, "first")
	r := openBuild(t, c1, root)
	st := brokertest.Start(t, c1, brokertest.Ctx(t), r.GetSessionId(), brokertest.Bash(ident+planter("fsm")+
		`git init -q nested && git -C nested config core.fsmonitor "$PWD/fsm" && touch planted && sleep 2`))
	for i := 0; i < 1000 && !brokertest.Exists(filepath.Join(root, "planted")); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	_, c2 := startBroker(t, dir, "second")
	r2 := openBuild(t, c2, root)
	if n := strings.Join(r2.GetNotices(), "\n"); strings.Contains(n, "earlier Garuda") {
		t.Errorf("a live broker's run was checked by another: %s", n)
	}
	if pending, _ := filepath.Glob(filepath.Join(dir, "home", "guard", "*", "*.json")); len(pending) != 1 {
		t.Errorf("the live run's pending file: %v", pending)
	}
	res, _, err := brokertest.Run(t, st, execv1.Choice_CHOICE_DENY)
	if err != nil || !strings.Contains(res.GetContent(), "core.fsmonitor") {
		t.Errorf("the run's own check: %v %v", res.GetContent(), err)
	}
	if pending, _ := filepath.Glob(filepath.Join(dir, "home", "guard", "*", "*.json")); len(pending) != 0 {
		t.Errorf("the pending file outlived its run's check: %v", pending)
	}
}

// A pending run that cannot be read is removed with a warning, and the session opens.
func TestGuardRemovesAnUnreadablePendingRun(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c) // the guard's folder of the root
	brokertest.Sh(t, c, sid, "true")
	dirs, _ := filepath.Glob(filepath.Join(e.Home, "guard", "*"))
	if len(dirs) != 1 {
		t.Fatalf("the root's pending folder: %v", dirs)
	}
	bad := filepath.Join(dirs[0], "1-1.json")
	brokertest.MustWrite(t, bad, `{"Version":1,"Root":"/","Links":["../../etc"]}`)
	r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: e.Root, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(r.GetNotices(), "\n"); !strings.Contains(n, "could not be read") {
		t.Errorf("no warning: %q", n)
	}
	if brokertest.Exists(bad) {
		t.Error("the unreadable pending run is still there")
	}
}

func TestGuardCrashAsNobody(t *testing.T) {
	rerunAsNobody(t, "^TestGuard(UndoesWhatAKilledBrokersRunLeft|LeavesALiveBrokersPendingRun|RemovesAnUnreadablePendingRun|"+
		"RemovesAStaleHalfWrittenPendingRun|PendingRunsLastAsLongAsTheirRun)$",
		"TestGuardUndoesWhatAKilledBrokersRunLeft", "TestGuardLeavesALiveBrokersPendingRun")
}

// A pending file a broker died writing (before its rename) is removed once it is over a minute old and no broker
// holds it; a younger one (a live broker's, before its lock) is left.
func TestGuardRemovesAStaleHalfWrittenPendingRun(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	brokertest.Sh(t, c, e.Open(c), "true")
	dirs, _ := filepath.Glob(filepath.Join(e.Home, "guard", "*"))
	if len(dirs) != 1 {
		t.Fatalf("the root's pending folder: %v", dirs)
	}
	old, young := filepath.Join(dirs[0], ".tmp-1"), filepath.Join(dirs[0], ".tmp-2")
	brokertest.MustWrite(t, old, `{"Vers`)
	brokertest.MustWrite(t, young, `{"Vers`)
	past := time.Now().Add(-2 * time.Minute)
	os.Chtimes(old, past, past)
	e.Open(c)
	if brokertest.Exists(old) || !brokertest.Exists(young) {
		t.Errorf("old removed: %v, young left: %v", !brokertest.Exists(old), brokertest.Exists(young))
	}
}

// The pending run of a background process and of an MCP server lasts as long as it runs, and goes at its end (a
// kept scan left behind would be checked by the next session as if its broker had died). Control: while each runs,
// its file is there.
func TestGuardPendingRunsLastAsLongAsTheirRun(t *testing.T) {
	pending := func(e *brokertest.Env) []string {
		p, _ := filepath.Glob(filepath.Join(e.Home, "guard", "*", "*.json"))
		return p
	}
	e, c, sid := mcpEnv(t)
	if p := pending(e); len(p) != 1 {
		t.Errorf("an MCP server runs: pending runs %v", p)
	}
	res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START,
		Command: "sleep 30"})
	id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
	if p := pending(e); len(p) != 2 {
		t.Errorf("an MCP server and a background process run: pending runs %v", p)
	}
	brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_STOP, Id: id})
	brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id})
	if p := pending(e); len(p) != 1 {
		t.Errorf("the background process ended: pending runs %v", p)
	}
	if _, err := c.CloseSession(brokertest.Ctx(t), &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	if p := pending(e); len(p) != 0 {
		t.Errorf("the session closed: pending runs %v", p)
	}
}
