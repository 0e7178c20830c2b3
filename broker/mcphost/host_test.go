package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/config"
	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/internal/testenv"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == mcptest.Arg {
		os.Exit(mcptest.Serve(os.Args[2]))
	}
	os.Exit(m.Run())
}

// launchPlain runs a server's program without the sandbox: these tests are about the host's side of the protocol
// (the broker's tests run servers through the sandbox).
func launchPlain(dir string) Launch {
	return func(ctx context.Context, srv config.MCPServer, stdin io.Reader, stdout io.Writer) error {
		cmd := exec.CommandContext(ctx, srv.Command, srv.Args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stdout, os.Stderr
		cmd.WaitDelay = time.Second
		// Not cmd.Stdin: Wait would wait for ever for a copy blocked on reading the host's pipe.
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		go func() { io.Copy(in, stdin); in.Close() }()
		return cmd.Wait()
	}
}

func stdioServer(t *testing.T, name, mode string) config.MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return config.MCPServer{Name: name, Type: config.MCPStdio, Command: exe, Args: []string{mcptest.Arg, mode}, File: "test",
		Source: config.MCPSourceUser}
}

func newHost(t *testing.T, timeout time.Duration) (*Host, string) {
	dir := t.TempDir()
	h := New(Options{Root: dir, Launch: launchPlain(dir), InitTimeout: timeout})
	t.Cleanup(h.Close)
	return h, dir
}

func call(t *testing.T, h *Host, server, tool, args string) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return h.Call(ctx, server, tool, json.RawMessage(args))
}

func TestStdioServerToolsAndCalls(t *testing.T) {
	h, _ := newHost(t, 20*time.Second)
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "test", mcptest.Good)}); len(n) > 0 {
		t.Fatal(n)
	}
	tools, notices, _ := h.Tools()
	if len(notices) > 0 {
		t.Error(notices)
	}
	names := map[string]Tool{}
	for _, tl := range tools {
		names[tl.Name] = tl
	}
	if tl, ok := names["mcp__test__echo"]; !ok || tl.Tool != "echo" || !strings.Contains(string(tl.Schema), `"text"`) || !tl.ReadOnlyHint {
		t.Fatalf("tools: %+v", tools)
	}
	res, err := call(t, h, "test", "echo", `{"text":"hi"}`)
	if err != nil || res.Text != "echo: hi" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	// Images are dropped with a note; the model reads text only.
	res, err = call(t, h, "test", "image", `{}`)
	if err != nil || !strings.Contains(res.Text, "a picture:") || !strings.Contains(res.Text,
		"image (image/png) was left out") || strings.Contains(res.Text, "PNG") {
		t.Errorf("image: %+v %v", res, err)
	}
	if _, err := call(t, h, "test", "nosuch", `{}`); err == nil {
		t.Error("a tool the server does not offer was called")
	}
}

// roots/list answers the project folder only; sampling and elicitation are refused.
func TestServerRequestsToTheClient(t *testing.T) {
	h, dir := newHost(t, 20*time.Second)
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "probe", mcptest.Probe)}); len(n) > 0 {
		t.Fatal(n)
	}
	var answers map[string]struct {
		Result struct {
			Roots []struct{ URI string }
		}
		Error *struct{ Message string }
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(answers) < 3 && time.Now().Before(deadline) {
		res, err := call(t, h, "probe", "probe", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal([]byte(res.Text), &answers)
	}
	if r := answers["roots"].Result.Roots; len(r) != 1 || r[0].URI != "file://"+dir {
		t.Errorf("roots: %+v", answers["roots"])
	}
	for _, k := range []string{"sampling", "elicitation"} {
		if answers[k].Error == nil {
			t.Errorf("%s was not refused: %+v", k, answers[k])
		}
	}
}

// Cancelling a call sends notifications/cancelled: the server's handler sees its context end.
func TestCancelReachesTheServer(t *testing.T) {
	h, dir := newHost(t, 20*time.Second)
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "test", mcptest.Good)}); len(n) > 0 {
		t.Fatal(n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := h.Call(ctx, "test", "sleep", nil); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	waitFile(t, filepath.Join(dir, "cancelled"))
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}

func TestToolListChanged(t *testing.T) {
	h, _ := newHost(t, 20*time.Second)
	h.Start(context.Background(), []config.MCPServer{stdioServer(t, "test", mcptest.Good)})
	_, _, gen := h.Tools()
	if _, err := call(t, h, "test", "grow", `{}`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tools, _, g := h.Tools()
		for _, tl := range tools {
			if tl.Name == "mcp__test__added" && g != gen {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the new tool never appeared")
}

// A stdio server still starting when StopStdio runs (a mode change) does not join: it started under the mode
// before. Control: the same start without StopStdio joins.
func TestStopStdioDuringAStart(t *testing.T) {
	for _, stop := range []bool{false, true} {
		dir := t.TempDir()
		gate, launched := make(chan struct{}), make(chan struct{})
		plain := launchPlain(dir)
		h := New(Options{Root: dir, InitTimeout: 20 * time.Second, Launch: func(ctx context.Context, srv config.MCPServer,
			stdin io.Reader, stdout io.Writer) error {
			close(launched)
			<-gate
			return plain(ctx, srv, stdin, stdout)
		}})
		done := make(chan []string, 1)
		go func() {
			done <- h.Start(context.Background(), []config.MCPServer{stdioServer(t, "test", mcptest.Good)})
		}()
		<-launched
		if stop {
			h.StopStdio("plan mode")
		}
		close(gate)
		notices := <-done
		if stop && (h.Running("test") || len(notices) != 1 || !strings.Contains(notices[0], "the mode changed while it started")) {
			t.Errorf("a server that started during StopStdio: running %v, notices %q", h.Running("test"), notices)
		}
		if !stop && (!h.Running("test") || len(notices) > 0) {
			t.Errorf("control: running %v, notices %q", h.Running("test"), notices)
		}
		h.Close()
	}
}

// A server that exits mid-call fails the call with a clear message, is restarted once with a notice, and after a
// second crash stays stopped.
func TestCrashRestartsOnce(t *testing.T) {
	h, _ := newHost(t, 20*time.Second)
	h.Start(context.Background(), []config.MCPServer{stdioServer(t, "test", mcptest.Good)})
	_, err := call(t, h, "test", "crash", `{}`)
	if err == nil || !strings.Contains(err.Error(), `MCP server "test"`) {
		t.Fatalf("crash: %v", err)
	}
	waitNotice(t, h, "restarted it")
	if res, err := call(t, h, "test", "echo", `{"text":"again"}`); err != nil || res.Text != "echo: again" {
		t.Fatalf("after the restart: %+v %v", res, err)
	}
	call(t, h, "test", "crash", `{}`)
	waitNotice(t, h, "not restarted")
	if _, err := call(t, h, "test", "echo", `{}`); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("a stopped server answered: %v", err)
	}
}

func waitNotice(t *testing.T, h *Host, want string) {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, n, _ := h.Tools()
		seen = append(seen, n...)
		for _, s := range seen {
			if strings.Contains(s, want) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no notice %q in %q", want, seen)
}

// Bad servers: each is reported and skipped, the good one still works.
func TestBadServersAreSkipped(t *testing.T) {
	h, _ := newHost(t, 2*time.Second)
	notices := h.Start(context.Background(), []config.MCPServer{
		stdioServer(t, "garbage", mcptest.Garbage),
		stdioServer(t, "silent", mcptest.Silent),
		{Name: "missing", Type: config.MCPStdio, Command: "/nonexistent/server", File: "test"},
		stdioServer(t, "good", mcptest.Good),
	})
	all := strings.Join(notices, "\n")
	for _, want := range []string{`"garbage" (test) did not start: it wrote something other than MCP messages`,
		`"silent" (test) did not start: it did not answer within 2s`, `"missing" (test) did not start`} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in\n%s", want, all)
		}
	}
	if !h.Running("good") || h.Running("garbage") || h.Running("silent") {
		t.Error("the wrong servers run")
	}
}

// A server that did not answer in time is not started again at the next prompts of the session (each would wait
// the whole limit again, 30 s, for a server already known not to answer), until its definition changes. A start
// cut short by the turn's cancel is said as such (not "context canceled") and tried again at the next prompt.
func TestServerThatDidNotAnswerIsNotStartedAgain(t *testing.T) {
	dir := t.TempDir()
	var launches atomic.Int32
	plain := launchPlain(dir)
	h := New(Options{Root: dir, InitTimeout: time.Second, Launch: func(ctx context.Context, srv config.MCPServer, in io.Reader,
		out io.Writer) error {
		launches.Add(1)
		return plain(ctx, srv, in, out)
	}})
	defer h.Close()
	silent := stdioServer(t, "silent", mcptest.Silent)
	notices := h.Start(context.Background(), []config.MCPServer{silent})
	if len(notices) != 1 || !strings.Contains(notices[0], "did not answer within 1s; it is not started again in this session") {
		t.Fatalf("first start: %q", notices)
	}
	if notices := h.Start(context.Background(), []config.MCPServer{silent}); len(notices) != 0 || launches.Load() != 1 {
		t.Errorf("the next prompt started it again: %d launches, notices %q", launches.Load(), notices)
	}
	changed := silent
	changed.Args = append(slices.Clone(silent.Args), "--changed")
	h.Start(context.Background(), []config.MCPServer{changed})
	if launches.Load() != 2 {
		t.Errorf("a changed definition was not started: %d launches", launches.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	other := stdioServer(t, "other", mcptest.Silent)
	notices = h.Start(ctx, []config.MCPServer{other})
	if len(notices) != 1 || !strings.Contains(notices[0], "the turn was cancelled while it started") ||
		strings.Contains(notices[0], "context canceled") {
		t.Errorf("a cancelled start: %q", notices)
	}
	h.Start(context.Background(), []config.MCPServer{other})
	if launches.Load() != 4 {
		t.Errorf("a start the cancel cut short was not tried again: %d launches", launches.Load())
	}
}

// A call the server never answers ends at CallTimeout with a message that says so (in garuda run with no terminal,
// no one would cancel it: the run would wait for ever), the server hears notifications/cancelled, and it answers the
// next call.
func TestCallThatIsNotAnsweredEnds(t *testing.T) {
	dir := t.TempDir()
	h := New(Options{Root: dir, Launch: launchPlain(dir), InitTimeout: 20 * time.Second, CallTimeout: time.Second})
	defer h.Close()
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "test", mcptest.Good)}); len(n) > 0 {
		t.Fatal(n)
	}
	_, err := call(t, h, "test", "sleep", `{}`)
	if err == nil || !strings.Contains(err.Error(), `MCP server "test" did not answer the call within 1s; it was cancelled`) {
		t.Fatalf("a call never answered: %v", err)
	}
	if !fileAppears(filepath.Join(dir, "cancelled")) {
		t.Error("the server did not hear the cancel")
	}
	if res, err := call(t, h, "test", "echo", `{"text":"next"}`); err != nil || res.Text != "echo: next" {
		t.Errorf("the next call: %+v %v", res, err)
	}
	// A prompt and a resource the server never answers end the same way.
	if _, _, err := h.GetPrompt(context.Background(), "test", "wait", ""); err == nil ||
		!strings.Contains(err.Error(), `MCP server "test" did not answer the prompt wait within 1s`) {
		t.Errorf("a prompt never answered: %v", err)
	}
	if _, err := h.ReadResource(context.Background(), "test", "mem://wait"); err == nil ||
		!strings.Contains(err.Error(), `MCP server "test" did not answer the read of mem://wait within 1s`) {
		t.Errorf("a resource never answered: %v", err)
	}
	if text, _, err := h.GetPrompt(context.Background(), "test", "review", "x"); err != nil || !strings.Contains(text, "review x") {
		t.Errorf("the next prompt: %q %v", text, err)
	}
}

// fileAppears reports whether path exists, waiting up to 2 s for a server to write it.
func fileAppears(path string) bool {
	for range 100 {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// 10,000 tools are cut to the limit; a name with hidden characters is made plain; a bad schema is left out with a
// notice.
func TestManyToolsHiddenNamesBadSchema(t *testing.T) {
	h, _ := newHost(t, 20*time.Second)
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "raw", mcptest.Many)}); len(n) > 0 {
		t.Fatal(n)
	}
	tools, notices, _ := h.Tools()
	all := strings.Join(notices, "\n")
	if len(tools) > MaxToolsPerServer || !strings.Contains(all, "more than 100 tools") || !strings.Contains(all, `"badschema" is left out`) {
		t.Errorf("%d tools, notices:\n%s", len(tools), all)
	}
	for _, tl := range tools {
		if !validName(tl.Name) || strings.ContainsAny(tl.Description, "\u200b\u202e") {
			t.Errorf("tool %q %q reaches the model", tl.Name, tl.Description)
		}
	}
	if tools[0].Name != "mcp__raw__hid_den_" || tools[0].Tool != "hid\u200bden\u202e" {
		t.Errorf("first tool %q (%q)", tools[0].Name, tools[0].Tool)
	}
}

// A tool left out of the model's list (an invalid schema, past the limit) is not called by its raw name either, nor
// is a name the server does not list; the server never hears of such a call. Control: a tool of the list is called.
func TestToolsNotOfferedAreNotCalled(t *testing.T) {
	h, _ := newHost(t, 20*time.Second)
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "raw", mcptest.Many)}); len(n) > 0 {
		t.Fatal(n)
	}
	if _, n, _ := h.Tools(); len(n) != 2 {
		t.Fatalf("notices: %q", n)
	}
	if res, err := call(t, h, "raw", "t00001", `{}`); err != nil || res.IsError {
		t.Fatalf("control: a tool of the list: %+v %v", res, err)
	}
	for tool, why := range map[string]string{
		"badschema": `its input schema's type is not "object"`,
		"t00098":    "only the server's first 100 tools are used", // the 101st it listed
		"t05000":    "",                                           // past what the host read of its list
		"nosuch":    "",
	} {
		_, err := call(t, h, "raw", tool, `{}`)
		if !errors.Is(err, ErrNotOffered) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), `MCP server "raw"`) {
			t.Errorf("%s: %v, want %v (%s)", tool, err, ErrNotOffered, why)
		}
		if err := h.Offered("raw", tool); !errors.Is(err, ErrNotOffered) {
			t.Errorf("Offered(%s): %v", tool, err)
		}
	}
	// The notices of what was left out come once, not with every list.
	if _, n, _ := h.Tools(); len(n) > 0 {
		t.Errorf("the notices came again: %q", n)
	}
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func TestModelNames(t *testing.T) {
	taken := map[string]bool{}
	a := uniqueName(modelName("srv", "a.b"), taken)
	b := uniqueName(modelName("srv", "a/b"), taken)
	long := uniqueName(modelName("server", strings.Repeat("x", 100)), taken)
	if a != "mcp__srv__a_b" || b != "mcp__srv__a_b_2" || len(long) != 64 || !validName(long) {
		t.Errorf("%q %q %q", a, b, long)
	}
}

// A 50 MB text is cut while it is read: the call gets its head and tail around a note, the whole is saved, and the
// broker never holds it.
func TestLongTextIsCutWhileRead(t *testing.T) {
	dir := t.TempDir()
	save := filepath.Join(dir, "out")
	h := New(Options{Root: dir, Launch: launchPlain(dir), SaveDir: save})
	t.Cleanup(h.Close)
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "big", mcptest.Good)}); len(n) > 0 {
		t.Fatal(n)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const size = 50_000_000
	// 50 MB through the race detector's reader takes 10-30 s on a loaded 2-core machine: the call gets 2 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := h.Call(ctx, "big", "big", json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, size)))
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, "BEGINxxx") || !strings.HasSuffix(res.Text, "xxxEND") || len(res.Text) > 2*keepText+300 {
		t.Fatalf("%d bytes, %v", len(res.Text), err)
	}
	if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > 64<<20 {
		t.Errorf("reading the 50 MB result allocated %d MiB", grown>>20)
	}
	i := strings.Index(res.Text, "the whole result is in ") + len("the whole result is in ")
	path := res.Text[i : i+strings.Index(res.Text[i:], " ...")]
	if fi, err := os.Stat(path); err != nil || fi.Size() != size+8 || filepath.Dir(path) != save || fi.Mode().Perm() != 0o600 {
		t.Errorf("saved: %s %v %v", path, fi, err)
	}
	if res, err := call(t, h, "big", "echo", `{"text":"after"}`); err != nil || res.Text != "echo: after" {
		t.Errorf("the next call: %+v %v", res, err)
	}
}

// Over HTTP too, a long text is cut while it is read (the streamable transport's event stream, and the older SSE
// one's).
func TestLongTextIsCutOverHTTP(t *testing.T) {
	for _, typ := range []string{config.MCPHTTP, config.MCPSSE} {
		handler := mcptest.Handler("")
		if typ == config.MCPSSE {
			handler = mcptest.SSEHandler()
		}
		srv := httptest.NewServer(handler)
		h, _ := newHost(t, 20*time.Second)
		if n := h.Start(context.Background(), []config.MCPServer{{Name: "web", Type: typ, URL: srv.URL, File: "test"}}); len(n) > 0 {
			t.Fatal(n)
		}
		// 20 MB through the race detector on a loaded machine can take longer than call's 20 s.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := h.Call(ctx, "web", "big", json.RawMessage(`{"bytes":20000000}`))
		cancel()
		if err != nil {
			t.Errorf("%s: %v", typ, err)
		} else if !strings.HasPrefix(res.Text, "BEGINxxx") || !strings.HasSuffix(res.Text, "xxxEND") ||
			!strings.Contains(res.Text, "bytes cut") || len(res.Text) > 2*keepText+300 {
			t.Errorf("%s: %d bytes", typ, len(res.Text))
		}
		h.Close()
		srv.Close()
	}
}

// A 100 MB answer that no cut makes small is refused while it is read: the call fails clearly and the broker never
// holds it.
func TestFloodIsBounded(t *testing.T) {
	h, _ := newHost(t, 20*time.Second)
	if n := h.Start(context.Background(), []config.MCPServer{stdioServer(t, "flood", mcptest.Flood)}); len(n) > 0 {
		t.Fatal(n)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := call(t, h, "flood", "t00000", `{}`)
	if err == nil || !strings.Contains(err.Error(), "over 8 MiB") {
		t.Fatalf("flood: %v", err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > 64<<20 {
		t.Errorf("reading the flood allocated %d MiB", grown>>20)
	}
}

func TestHTTPServerHeadersAndUnauthorized(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler("t0ken"))
	h, _ := newHost(t, 20*time.Second)
	defer srv.Close()
	defer h.Close() // first: its event stream holds a connection to srv open
	good := config.MCPServer{Name: "web", Type: config.MCPHTTP, URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer t0ken"}, File: "test"}
	bad := config.MCPServer{Name: "nokey", Type: config.MCPHTTP, URL: srv.URL, File: "test"}
	notices := h.Start(context.Background(), []config.MCPServer{good, bad})
	if len(notices) != 1 || !strings.Contains(notices[0], `"nokey"`) || !strings.Contains(notices[0],
		"refused the credentials (check the headers of its definition) (HTTP 401)") {
		t.Errorf("notices: %q", notices)
	}
	res, err := call(t, h, "web", "echo", `{"text":"over http"}`)
	if err != nil || res.Text != "echo: over http" {
		t.Fatalf("echo: %+v %v", res, err)
	}
}

// An HTTP or SSE server that cannot be reached, answers an error status, is not an MCP endpoint or redirects for
// ever is a notice that says so in words, naming no transport's text and nothing the server sent; the session's
// other servers start.
func TestHTTPServerFailuresInWords(t *testing.T) {
	refused := testenv.RefusedAddress(t)
	good := mcptest.Handler("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			good.ServeHTTP(w, r)
		case "/boom":
			http.Error(w, "<html>SERVER-SECRET boom</html>", http.StatusInternalServerError)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/forbidden":
			http.Error(w, "SERVER-SECRET no", http.StatusForbidden)
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>SERVER-SECRET page</html>")
		}
	}))
	h, _ := newHost(t, 20*time.Second)
	defer srv.Close()
	defer h.Close()
	def := func(name, typ, url string) config.MCPServer {
		return config.MCPServer{Name: name, Type: typ, URL: url, File: "test"}
	}
	notices := h.Start(context.Background(), []config.MCPServer{
		def("good", config.MCPHTTP, srv.URL+"/mcp"),
		def("refused", config.MCPHTTP, "http://"+refused+"/mcp"),
		def("boom", config.MCPHTTP, srv.URL+"/boom"),
		def("page", config.MCPHTTP, srv.URL+"/page"),
		def("ssepage", config.MCPSSE, srv.URL+"/page"),
		def("loop", config.MCPHTTP, srv.URL+"/loop"),
		def("forbidden", config.MCPHTTP, srv.URL+"/forbidden"),
	})
	all := strings.Join(notices, "\n")
	for _, want := range []string{
		`"boom" (test) did not start: it answered HTTP 500 Internal Server Error: is ` + srv.URL + `/boom its MCP endpoint?`,
		`"loop" (test) did not start: it redirects more than 10 times`,
		`"page" (test) did not start: it answered with text/html, not MCP messages: is ` + srv.URL + `/page its MCP endpoint?`,
		`"refused" (test) did not start: nothing accepts connections at ` + refused + ` (connection refused)`,
		`"ssepage" (test) did not start: it answered with text/html, not MCP messages`,
		`"forbidden" (test) did not start: the server refused access (wrong address, or credentials without the right ` +
			`to it?) (HTTP 403 Forbidden)`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no notice %q in:\n%s", want, all)
		}
	}
	for _, raw := range []string{"SERVER-SECRET", "rejected by transport", "dial tcp", "calling \"", "sending \""} {
		if strings.Contains(all, raw) {
			t.Errorf("a notice holds %q:\n%s", raw, all)
		}
	}
	if res, err := call(t, h, "good", "echo", `{"text":"still here"}`); err != nil || res.Text != "echo: still here" {
		t.Fatalf("the good server: %+v %v", res, err)
	}
	// A server's own error answer (here to a resource it does not have) is its words, not the HTTP exchange's.
	_, err := h.ReadResource(context.Background(), "good", "file:///no/such/resource")
	if err == nil || strings.Contains(err.Error(), "MCP endpoint") || strings.Contains(err.Error(), "HTTP") {
		t.Errorf("a JSON-RPC error: %v", err)
	}
}

// BenchmarkCallDirect is one call of the echo tool of a stdio server, without the broker (see
// BenchmarkMCPCallThroughBroker in frontend/acpagent).
func BenchmarkCallDirect(b *testing.B) {
	exe, _ := os.Executable()
	dir := b.TempDir()
	h := New(Options{Root: dir, Launch: launchPlain(dir)})
	defer h.Close()
	srv := config.MCPServer{Name: "bench", Type: config.MCPStdio, Command: exe, Args: []string{mcptest.Arg, mcptest.Good}, File: "bench"}
	if n := h.Start(context.Background(), []config.MCPServer{srv}); len(n) > 0 {
		b.Fatal(n)
	}
	for b.Loop() {
		if _, err := h.Call(context.Background(), "bench", "echo", json.RawMessage(`{"text":"x"}`)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartFiveServers starts 5 stdio servers at once without the sandbox and lists their tools and prompts, as
// a session's first prompt does through the broker: the servers' own start, which frontend/acpagent's
// BenchmarkMCPFirstPromptFiveServers pays too (BenchmarkStartOneServer: one). The server is $MCPTEST_SERVER where
// set (mcptest's server built as a small binary of its own, as the first-prompt benchmarks run it), else this test
// binary, whose start costs more.
func BenchmarkStartFiveServers(b *testing.B) { benchStart(b, 5) }

func BenchmarkStartOneServer(b *testing.B) { benchStart(b, 1) }

func benchStart(b *testing.B, n int) {
	prog, args := os.Getenv("MCPTEST_SERVER"), []string{mcptest.Good}
	if prog == "" {
		prog, _ = os.Executable()
		args = []string{mcptest.Arg, mcptest.Good}
	}
	dir := b.TempDir()
	var defs []config.MCPServer
	for i := range n {
		defs = append(defs, config.MCPServer{Name: fmt.Sprintf("s%d", i), Type: config.MCPStdio, Command: prog, Args: args, File: "bench"})
	}
	for b.Loop() {
		h := New(Options{Root: dir, Launch: launchPlain(dir)})
		if notices := h.Start(context.Background(), defs); len(notices) > 0 {
			b.Fatal(notices)
		}
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
}

func TestSSEServer(t *testing.T) {
	srv := httptest.NewServer(mcptest.SSEHandler())
	h, _ := newHost(t, 20*time.Second)
	defer srv.Close()
	defer h.Close()
	if n := h.Start(context.Background(), []config.MCPServer{{Name: "sse", Type: config.MCPSSE, URL: srv.URL, File: "test"}}); len(n) > 0 {
		t.Fatal(n)
	}
	res, err := call(t, h, "sse", "echo", `{"text":"over sse"}`)
	if err != nil || res.Text != "echo: over sse" {
		t.Fatalf("echo: %+v %v", res, err)
	}
}
