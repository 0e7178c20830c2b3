package broker_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
	"github.com/garuda-dev/garuda/test/nobody"
)

// internet is a server standing in for a host of the internet: on 127.0.0.2 of the broker's network namespace,
// which a sandboxed command (in a namespace of its own) reaches only through the broker's proxy.
func internet(t *testing.T, tls bool) (*httptest.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the internet: %s %s\n", r.Method, r.URL.Path)
	}))
	srv.Listener = ln
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().String()
}

// A sandboxed curl reaches a host only through the proxy: a question first (denied: a 403 that says how to allow
// the host), then with a rule it gets the page, over plain HTTP and over a CONNECT tunnel (TLS not intercepted).
// A command that ignores the proxy variables, or speaks raw TCP, still fails.
func TestProxySandboxedCurl(t *testing.T) {
	e := brokertest.New(t)
	_, plain := internet(t, false)
	_, secure := internet(t, true)
	c := e.Client()
	sid := e.Open(c)
	curl := "curl -sS --max-time 20 -w ' [%{http_code}]' http://" + plain + "/pkg"

	// Before any rule: a question on the bash call while the command waits; a no gives curl a 403.
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(curl)), execv1.Choice_CHOICE_DENY)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].GetTitle() != "Allow network access to 127.0.0.2?" || qs[0].GetKind() != "network" {
		t.Fatalf("want one network question, got %v", qs)
	}
	if !strings.Contains(res.GetContent(), "[403]") || !strings.Contains(res.GetContent(), `"network(domain:127.0.0.2)"`) {
		t.Fatalf("denied: want a 403 that says how to allow the host, got %q", res.GetContent())
	}

	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["network(domain:127.0.0.2)"]}}`)
	sid = e.Open(c)
	for _, cmd := range []string{curl, "curl -sSk --max-time 20 -w ' [%{http_code}]' https://" + secure + "/tls"} {
		res, qs, err = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(cmd)), execv1.Choice_CHOICE_DENY)
		if err != nil || len(qs) != 0 || !strings.Contains(res.GetContent(), "hello from the internet") ||
			!strings.Contains(res.GetContent(), "[200]") {
			t.Fatalf("%s with the rule: %v, questions %v, %v", cmd, res.GetContent(), qs, err)
		}
	}
	// The ways around the proxy fail as before: no proxy, raw TCP, UDP, DNS.
	host, port, _ := net.SplitHostPort(plain)
	for _, cmd := range []string{
		"curl -sS --max-time 5 --noproxy '*' http://" + plain + "/direct",
		"exec 3<>/dev/tcp/" + host + "/" + port + " && echo connected",
		"echo x > /dev/udp/1.1.1.1/53 && echo sent",
		"getent hosts example.com && echo resolved",
	} {
		res := brokertest.Sh(t, c, sid, cmd)
		if res.GetStatus() == execv1.Status_STATUS_COMPLETED || strings.Contains(res.GetContent(), "hello from") ||
			strings.Contains(res.GetContent(), "connected") || strings.Contains(res.GetContent(), "resolved") {
			t.Errorf("%s: got through: %q", cmd, res.GetContent())
		}
	}
	// Every connection is recorded: host, port, the address dialled, bytes, verdict.
	var allowed, denied int
	for _, r := range brokertest.AuditRecords(t, e.Home) {
		if r.Event != "connection" {
			continue
		}
		switch {
		case r.Verdict == "allow" && r.Detail["address"] != "" && r.Detail["bytes_down"] != "0":
			allowed++
		case r.Verdict == "deny" && r.Input == plain:
			denied++
		}
	}
	if allowed != 2 || denied != 1 {
		t.Errorf("audit: %d allowed and %d denied connections recorded, want 2 and 1", allowed, denied)
	}
}

// "Allow for this session" adds a session rule: the next command reaches the host without a question; a request
// whose Host header names another host than its URL is refused.
func TestProxySessionConsent(t *testing.T) {
	e := brokertest.New(t)
	_, plain := internet(t, false)
	c := e.Client()
	sid := e.Open(c)
	curl := "curl -sS --max-time 20 -w ' [%{http_code}]' http://" + plain + "/a"
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(curl+" && "+curl)),
		execv1.Choice_CHOICE_SESSION)
	if err != nil || len(qs) != 1 || strings.Count(res.GetContent(), "[200]") != 2 {
		t.Fatalf("allowed for the session: %q, questions %v, %v", res.GetContent(), qs, err)
	}
	res, qs, err = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(curl)), execv1.Choice_CHOICE_DENY)
	if err != nil || len(qs) != 0 || !strings.Contains(res.GetContent(), "[200]") {
		t.Fatalf("the next command: %q, questions %v, %v", res.GetContent(), qs, err)
	}
	res, _, _ = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid,
		brokertest.Bash("curl -sS --max-time 20 -H 'Host: evil.example' -w ' [%{http_code}]' http://"+plain+"/b")),
		execv1.Choice_CHOICE_DENY)

	if !strings.Contains(res.GetContent(), "[400]") || !strings.Contains(res.GetContent(), "names another host") {
		t.Errorf("a Host header for another host: %q", res.GetContent())
	}
}

// TestProxyAsNobody runs the proxy tests again as the unprivileged user nobody (a user namespace for the sandbox).
func TestProxyAsNobody(t *testing.T) {
	nobody.Rerun(t, "^TestProxy(SandboxedCurl|SessionConsent|GoModDownload|NpmInstall|PlanMode)$",
		"TestProxySandboxedCurl", "TestProxyGoModDownload", "TestProxyNpmInstall", "TestProxyPlanMode")
}

// hostAddress is an address of this machine that is not loopback (Go's HTTP client never proxies loopback
// addresses), on which a server stands in for a registry: a sandboxed command reaches it only through the proxy.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}

// goProxy serves one module, example.com/hello v1.0.0, by the GOPROXY protocol.
func goProxy(t *testing.T, ip string) string {
	t.Helper()
	var zb strings.Builder
	zw := zip.NewWriter(&zb)
	for name, body := range map[string]string{"go.mod": "module example.com/hello\n\ngo 1.21\n",
		"hello.go": "package hello\n\nfunc Hello() string { return \"hello\" }\n"} {
		w, _ := zw.Create("example.com/hello@v1.0.0/" + name)
		io.WriteString(w, body)
	}
	zw.Close()
	files := map[string]string{
		"/example.com/hello/@v/list":        "v1.0.0\n",
		"/example.com/hello/@v/v1.0.0.info": `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`,
		"/example.com/hello/@v/v1.0.0.mod":  "module example.com/hello\n\ngo 1.21\n",
		"/example.com/hello/@v/v1.0.0.zip":  zb.String(),
	}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("listen on %s: %v", ip, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// A sandboxed `go mod download` fetches a module from a registry once its host is allowed, and fails before.
func TestProxyGoModDownload(t *testing.T) {
	testenv.NeedCommand(t, "go", "golang (or Go from go.dev)")
	ip := hostAddress(t)
	registry := goProxy(t, ip)
	e := brokertest.New(t)
	c := e.Client()
	cmd := "cd \"$TMPDIR\" && GOPROXY=" + registry + " GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-modcacherw " +
		"GOMODCACHE=\"$TMPDIR/mod\" go mod download -json example.com/hello@v1.0.0"
	sid := e.Open(c)
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(cmd)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() == execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "403") {
		t.Fatalf("before the host is allowed: %v %v", res.GetContent(), err)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["network(domain:`+ip+`)"]}}`)
	sid = e.Open(c)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(cmd)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 ||
		!strings.Contains(res.GetContent(), `"Version": "v1.0.0"`) {
		t.Fatalf("with the host allowed: %v, questions %v, %v", res.GetContent(), qs, err)
	}
}

// npmRegistry serves one package, left-pad-garuda 1.0.0, by the npm registry protocol.
func npmRegistry(t *testing.T, ip string) string {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"left-pad-garuda","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = () => 'padded';\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		io.WriteString(tw, body)
	}
	tw.Close()
	gz.Close()
	sum := sha1.Sum(tgz.Bytes())
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("listen on %s: %v", ip, err)
	}
	base := "http://" + ln.Addr().String()
	packument := fmt.Sprintf(`{"name":"left-pad-garuda","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":`+
		`{"name":"left-pad-garuda","version":"1.0.0","dist":{"tarball":"%s/left-pad-garuda/-/left-pad-garuda-1.0.0.tgz","shasum":"%x"}}}}`,
		base, sum)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/left-pad-garuda":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, packument)
		case "/left-pad-garuda/-/left-pad-garuda-1.0.0.tgz":
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base
}

// A sandboxed `npm install` gets a package from a registry once its host is allowed, and fails before.
func TestProxyNpmInstall(t *testing.T) {
	testenv.NeedCommand(t, "npm", "npm")
	ip := hostAddress(t)
	registry := npmRegistry(t, ip)
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, "package.json"), `{"name":"app","version":"0.0.1","private":true}`)
	c := e.Client()
	cmd := "npm install --no-audit --no-fund --fetch-retries=0 --registry=" + registry + " left-pad-garuda && " +
		"node -e \"console.log(require('left-pad-garuda')())\""
	sid := e.Open(c)
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(cmd)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() == execv1.Status_STATUS_COMPLETED || strings.Contains(res.GetContent(), "padded") {
		t.Fatalf("before the host is allowed: %v %v", res.GetContent(), err)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["network(domain:`+ip+`)"]}}`)
	sid = e.Open(c)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(cmd)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 || !strings.Contains(res.GetContent(), "padded") {
		t.Fatalf("with the host allowed: %v, questions %v, %v", res.GetContent(), qs, err)
	}
}

// A background process reaches the network through the proxy as a command does: a host a rule allows is reached; a
// host no rule allows is refused with how to allow it, without a question (no call is running to ask on).
func TestProxyBackgroundProcess(t *testing.T) {
	e := brokertest.New(t)
	_, plain := internet(t, false)
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["network(domain:127.0.0.2)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	_, port, _ := net.SplitHostPort(plain)
	for _, tc := range []struct{ url, want string }{
		{"http://" + plain + "/pkg", "hello from the internet"},
		{"http://127.0.0.3:" + port + "/pkg", `network(domain:127.0.0.3)`},
	} {
		res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START,
			Command: "curl -sS --max-time 20 -w ' [%{http_code}]' " + tc.url})

		id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
		res = brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id, TimeoutMs: 60_000})
		if !strings.Contains(res.GetContent(), tc.want) {
			t.Errorf("%s from a background process: want %q in %q", tc.url, tc.want, res.GetContent())
		}
	}
}

// A hook reaches the network through the proxy, by the rules alone: an allowed host's page becomes the prompt's
// context; without the rule the hook's curl gets the 403 (no question: a hook asks nothing).
func TestProxyHook(t *testing.T) {
	_, plain := internet(t, false)
	for _, allowed := range []bool{false, true} {
		e := brokertest.New(t)
		sc := e.Script(t, "fetch.sh", "cat >/dev/null; curl -sS --max-time 20 http://"+plain+"/hook")
		rules := ""
		if allowed {
			rules = `"permissions": {"allow": ["network(domain:127.0.0.2)"]}, `
		}
		e.Settings(t, "{"+rules+strings.TrimPrefix(brokertest.HooksJSON("UserPromptSubmit", "", sc, ""), "{"))
		c := e.Client()
		sid := e.Open(c)
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.HookEvent("UserPromptSubmit", "hi", "")),
			execv1.Choice_CHOICE_ONCE)
		got := res.GetHook().GetContext()
		if err != nil || len(qs) != 0 || strings.Contains(got, "hello from the internet") != allowed {
			t.Errorf("rule %v: context %q, questions %v, %v", allowed, got, qs, err)
		}
	}
}

// Plan mode keeps the network policy as it is (a question for a host no rule names, the page with a rule) and the
// root read-only: curl reaches the host but cannot save the page in the project. Control: the same save in build
// mode lands.
func TestProxyPlanMode(t *testing.T) {
	e := brokertest.New(t)
	_, plain := internet(t, false)
	c := e.Client()
	sid := e.Open(c)
	if _, err := c.SetMode(brokertest.Ctx(t), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_PLAN}); err != nil {
		t.Fatal(err)
	}
	curl := "curl -sS --max-time 20 -w ' [%{http_code}]' http://" + plain + "/plan"
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(curl)), execv1.Choice_CHOICE_DENY)
	if err != nil || len(qs) != 1 || qs[0].GetKind() != "network" || !strings.Contains(res.GetContent(), "[403]") {
		t.Fatalf("plan mode, no rule: want a network question and a 403, got %q, questions %v, %v", res.GetContent(), qs, err)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["network(domain:127.0.0.2)"]}}`)
	sid = e.Open(c)
	if _, err := c.SetMode(brokertest.Ctx(t), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_PLAN}); err != nil {
		t.Fatal(err)
	}
	save := "curl -sS --max-time 20 -o page.txt http://" + plain + "/plan && echo saved"
	for cmd, want := range map[string]string{curl: "[200]", save: ""} {
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(cmd)), execv1.Choice_CHOICE_DENY)
		if err != nil || len(qs) != 0 {
			t.Fatalf("%s: %v, questions %v", cmd, err, qs)
		}
		if want != "" && !strings.Contains(res.GetContent(), want) {
			t.Errorf("plan mode with the rule: %q, want %s", res.GetContent(), want)
		}
		if want == "" && strings.Contains(res.GetContent(), "saved") {
			t.Errorf("plan mode saved the page in the project: %q", res.GetContent())
		}
	}
	if _, err := os.Stat(filepath.Join(e.Root, "page.txt")); err == nil {
		t.Error("page.txt was written in plan mode")
	}
	// The control: in build mode the same command saves the page.
	if _, err := c.SetMode(brokertest.Ctx(t), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_BUILD}); err != nil {
		t.Fatal(err)
	}
	res, _, _ = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(save)), execv1.Choice_CHOICE_DENY)
	page := brokertest.FileText(filepath.Join(e.Root, "page.txt"))
	if !strings.Contains(res.GetContent(), "saved") || !strings.Contains(page, "hello from the internet") {
		t.Errorf("build mode: %q", res.GetContent())
	}
}

// A network question waits no longer than the command may run: left unanswered, the command ends at its timeout and
// the call's result comes, the host not reached. Control: answered at once, the same command gets the page.
func TestProxyQuestionBoundedByTimeout(t *testing.T) {
	e := brokertest.New(t)
	_, plain := internet(t, false)
	c := e.Client()
	sid := e.Open(c)
	curl := "curl -sS --max-time 30 -w ' [%{http_code}]' http://" + plain + "/wait"
	op := brokertest.Bash(curl)
	op.GetBash().TimeoutMs = 2000
	st := brokertest.Start(t, c, brokertest.Ctx(t), sid, op)
	m, err := brokertest.Next(t, st)
	if err != nil || m.GetQuestion() == nil || m.GetQuestion().GetKind() != "network" {
		t.Fatalf("want the network question first, got %v, %v", m, err)
	}
	began := time.Now()
	for {
		m, err = brokertest.Next(t, st)
		if err != nil {
			t.Fatalf("waiting for the result: %v", err)
		}
		if m.GetResult() != nil {
			break
		}
	}
	res := m.GetResult()
	t.Logf("unanswered: %s after %s: %q", res.GetStatus(), time.Since(began), res.GetContent())
	if waited := time.Since(began); waited > 15*time.Second {
		t.Errorf("the unanswered question held the call for %s, past the command's 2 s", waited)
	}
	if res.GetStatus() == execv1.Status_STATUS_COMPLETED || strings.Contains(res.GetContent(), "hello from the internet") ||
		!strings.Contains(res.GetContent(), "timed out") {
		t.Errorf("unanswered: want the command timed out without reaching the host, got %v", res)
	}
	// The control: the same command, its question answered, gets the page.
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Bash(curl)), execv1.Choice_CHOICE_ONCE)
	if err != nil || len(qs) != 1 || !strings.Contains(res.GetContent(), "[200]") {
		t.Fatalf("answered: %q, questions %v, %v", res.GetContent(), qs, err)
	}
}
