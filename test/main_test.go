package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/internal/testenv"
	"github.com/garuda-dev/garuda/internal/testproc"
	"github.com/garuda-dev/garuda/test/release"
)

// bins holds the binaries built once for this test run, in a folder every user may read (the unprivileged tests
// run them as nobody). test/ is the one package whose tests build them: every test of the built binaries, as an
// editor, a shell or a service manager runs them, lives here.
var bins struct {
	dir, garuda, exec string
	sandbox           string // garuda-sandbox, beside garuda-exec as make install puts it
	self              string // a copy of this test binary that others may run
	err               error
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if len(os.Args) > 2 && os.Args[1] == mcptest.Arg {
		return mcptest.Serve(os.Args[2]) // the MCP tests' server, run by the broker in the sandbox
	}
	// Re-run as a tiny client: connect to a unix socket and exit 0 if the kernel let us.
	if path := os.Getenv("GARUDA_TEST_CONNECT"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.Close()
		return 0
	}
	dir, err := os.MkdirTemp("", "garuda-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bins.dir = dir
	bins.garuda = filepath.Join(dir, "garuda")
	bins.exec = filepath.Join(dir, "garuda-exec")
	bins.sandbox = filepath.Join(dir, "garuda-sandbox")
	// Tests never read the real /etc/garuda/policy.json: the managed policy path is fixed at build time.
	ld := "-X github.com/garuda-dev/garuda/broker.ManagedPolicyPath=" + filepath.Join(dir, "managed-policy.json")
	bins.self = filepath.Join(dir, "test.bin")
	if data, err := os.ReadFile(os.Args[0]); err == nil {
		os.WriteFile(bins.self, data, 0o755)
	}
	// The three in one go build: the links run side by side.
	if out, err := release.Command("..", ld, dir+string(filepath.Separator),
		"./cmd/garuda", "./cmd/garuda-exec", "./cmd/garuda-sandbox").CombinedOutput(); err != nil {
		bins.err = fmt.Errorf("build the binaries: %v\n%s", err, out)
	}
	// The brokers these tests start share their user's memory limit with no other test binary's.
	defer testenv.IsolateMemoryCgroup()()
	return m.Run()
}

// fakeModels is a models.json whose default model "fake" is served by a fake Anthropic provider at url, its key in
// LOCAL_API_KEY.
func fakeModels(url string) string {
	return fmt.Sprintf(`{"default":"fake","providers":{"local":{"type":"anthropic","base_url":%q,"api_key_env":"LOCAL_API_KEY"}},`+
		`"models":{"fake":{"provider":"local","id":"fake-model"}}}`, url)
}

func needBins(t testing.TB) {
	t.Helper()
	if bins.err != nil {
		t.Fatal(bins.err)
	}
}

// waitBrokerGone waits until neither garuda-exec nor garuda-sandbox (the sandbox's helpers: commands' pid 1s,
// sessions' network holders) runs; it fails t after within.
func waitBrokerGone(t testing.TB, within time.Duration) {
	t.Helper()
	testproc.WaitExeGone(t, within, bins.exec)
	testproc.WaitExeGone(t, within, bins.sandbox)
}

// openDir makes a temp folder that other users may enter (for tests that run as nobody).
func openDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for p := d; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	return d
}

var mcpServer struct {
	once sync.Once
	path string // in bins.dir
	err  error
}

// mcpTestServer builds mcptest's small stdio MCP server once (the benchmarks' server: its start is part of what
// they measure, and the test binary, which serves mcptest.Arg too, starts slower) and returns its path; or it
// takes the one $MCPTEST_SERVER names, built before (a profile of the benchmark then holds no build).
func mcpTestServer(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MCPTEST_SERVER"); p != "" {
		return p
	}
	mcpServer.once.Do(func() {
		mcpServer.path = filepath.Join(bins.dir, "mcptestserver")
		if out, err := release.Command("..", "", mcpServer.path, "./broker/mcphost/mcptest/mcptestserver").CombinedOutput(); err != nil {
			mcpServer.err = fmt.Errorf("build mcptestserver: %v\n%s", err, out)
		}
	})
	if mcpServer.err != nil {
		t.Fatal(mcpServer.err)
	}
	return mcpServer.path
}
