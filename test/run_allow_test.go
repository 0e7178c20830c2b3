package test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"
	"github.com/garuda-dev/garuda/internal/testenv"
)

// garuda run's flags for what a run with no terminal cannot ask: --allow-mcp SERVER, --allow-host HOST and
// --allow-web-search. Each answers only its own question, and none answers what team policy denies: the broker
// refuses that before it asks.

// teamPolicy writes the home's team policy file ($GARUDA_HOME/policy.json).
func (e *runEnv) teamPolicy(body string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.home, "policy.json"), []byte(body), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// questions runs garuda run with args (--json among them) and returns its question events, after checking that it
// ended normally.
func (e *runEnv) questions(args ...string) []map[string]any {
	e.t.Helper()
	code, stdout, stderr := e.run(args...)
	if code != 0 {
		e.t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return ofType(events(e.t, stdout), "question")
}

// A project's MCP server (.mcp.json, run by the test binary in the sandbox): --allow-mcp answers its consent and the
// call of its tool, whose result reaches the model. The controls: without the flag, or with the flag naming another
// server, the consent is denied, the server never starts and the model never gets the result; with the flag, a team
// policy that denies the server still keeps it from starting, and no question is asked.
func TestRunAllowMCP(t *testing.T) {
	for _, c := range []struct {
		name, team string
		args       []string
		started    bool
	}{
		{"allowed", "", []string{"--allow-mcp", "other", "--allow-mcp", "tools"}, true},
		{"no flag", "", nil, false},
		{"another server", "", []string{"--allow-mcp", "other"}, false},
		{"team policy denies it", `{"mcp_servers":{"deny":["name:tools"]}}`, []string{"--allow-mcp", "tools"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newRunEnv(t,
				fakeprovider.Turn{Text: "Echoing.", ToolCalls: []fakeprovider.ToolCall{{ID: "m1", Name: "mcp__tools__echo",
					Input: `{"text":"pelican"}`}}},
				fakeprovider.Turn{Text: "Done."})
			def, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tools": map[string]any{
				"command": bins.self, "args": []string{mcptest.Arg, mcptest.Good}, "env": map[string]string{"MCPTEST_MARK": "started"}}}})
			if err := os.WriteFile(filepath.Join(e.root, ".mcp.json"), def, 0o644); err != nil {
				t.Fatal(err)
			}
			if c.team != "" {
				e.teamPolicy(c.team)
			}
			qs := e.questions(append([]string{"--json", "use the echo tool"}, c.args...)...)
			_, err := os.Stat(filepath.Join(e.root, "started"))
			if started := err == nil; started != c.started {
				t.Fatalf("server started: %v, want %v; questions %v", started, c.started, qs)
			}
			echoed := e.provider.LastBodyContains("echo: pelican")
			switch {
			case c.started:
				if len(qs) != 2 || qs[0]["server"] != "tools" || qs[0]["consentKind"] != "mcp_server" || qs[1]["server"] != "tools" ||
					qs[1]["kind"] != "mcp_tool" {
					t.Fatalf("want the consent and the tool call about the server tools, got %v", qs)
				}
				for _, q := range qs {
					if q["answer"] != "once" || q["by"] != "--allow-mcp tools" {
						t.Errorf("not answered by the flag: %v", q)
					}
				}
				if !echoed {
					t.Error("the tool's result never reached the model")
				}
			case c.team != "":
				if len(qs) != 0 || echoed {
					t.Fatalf("team policy denies the server, yet: questions %v, echoed %v", qs, echoed)
				}
			default:
				if len(qs) != 1 || qs[0]["server"] != "tools" || qs[0]["answer"] != "deny" ||
					!strings.Contains(str(qs[0], "by"), "--allow-mcp tools would") || echoed {
					t.Fatalf("want the consent denied with the flag that would allow it: questions %v, echoed %v", qs, echoed)
				}
			}
		})
	}
}

// str is an event's field as text ("" when absent).
func str(ev map[string]any, key string) string {
	s, _ := ev[key].(string)
	return s
}

// hostServer is a web server on addr (a 127.0.0.0/8 address) that counts its requests.
type hostServer struct {
	url string
	mu  sync.Mutex
	n   int
}

func serveHost(t *testing.T, addr string) *hostServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	h := &hostServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
		fmt.Fprintf(w, "page of %s\n", r.Host)
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *hostServer) requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// --allow-host answers the network question about exactly that host, for web_fetch and for a sandboxed command's
// connection through the proxy; another host on the same machine stays denied. The controls: without the flag
// both are denied and neither server sees a request; with the flag, a team policy that denies the host refuses it
// before any question.
func TestRunAllowHost(t *testing.T) {
	for _, c := range []struct {
		name, team, flag string
		allowed          bool
	}{
		{"allowed", "", "127.0.0.2", true},
		{"another spelling", "", "127.0.0.2.", true},
		{"no flag", "", "", false},
		{"team policy denies it", `{"permissions":{"deny":["network(domain:127.0.0.2)"]}}`, "127.0.0.2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Not 127.0.0.1: inside the sandbox that is the command's own loopback, reached without the proxy.
			one, two := serveHost(t, "127.0.0.2:0"), serveHost(t, "127.0.0.3:0")
			fetch := func(id, url string) fakeprovider.ToolCall {
				in, _ := json.Marshal(map[string]string{"url": url + "/page"})
				return fakeprovider.ToolCall{ID: id, Name: "web_fetch", Input: string(in)}
			}
			curl, _ := json.Marshal(map[string]string{"command": "curl -sS --max-time 20 " + one.url + "/cmd; " +
				"curl -sS --max-time 20 " + two.url + "/cmd"})
			e := newRunEnv(t,
				fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{fetch("f1", one.url)}},
				fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{fetch("f2", two.url)}},
				fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{{ID: "b1", Name: "bash", Input: string(curl)}}},
				fakeprovider.Turn{Text: "Done."})
			if c.team != "" {
				e.teamPolicy(c.team)
			}
			args := []string{"--json", "fetch the pages"}
			if c.flag != "" {
				args = append(args, "--allow-host", c.flag)
			}
			qs := e.questions(args...)
			byHost := map[string][]map[string]any{}
			for _, q := range qs {
				if q["kind"] != "network" {
					t.Errorf("a question that is not about the network: %v", q)
				}
				byHost[str(q, "host")] = append(byHost[str(q, "host")], q)
			}
			// The other host: asked by web_fetch and by the command, denied both times, never reached.
			if q := byHost["127.0.0.3"]; len(q) != 2 || q[0]["answer"] != "deny" || q[1]["answer"] != "deny" ||
				!strings.Contains(str(q[0], "by"), "--allow-host 127.0.0.3 would") {
				t.Errorf("questions about 127.0.0.3: %v", q)
			}
			if n := two.requests(); n != 0 {
				t.Errorf("127.0.0.3 got %d requests", n)
			}
			q := byHost["127.0.0.2"]
			switch {
			case c.allowed:
				if len(q) != 2 || q[0]["answer"] != "once" || q[0]["by"] != "--allow-host 127.0.0.2" || q[1]["answer"] != "once" {
					t.Errorf("questions about 127.0.0.2: %v", q)
				}
				if n := one.requests(); n != 2 || !e.provider.LastBodyContains("page of 127.0.0.2") {
					t.Errorf("127.0.0.2 got %d requests (want the fetch and the command's)", n)
				}
			case c.team != "":
				if len(q) != 0 || one.requests() != 0 {
					t.Errorf("team policy denies 127.0.0.2, yet: questions %v, %d requests", q, one.requests())
				}
			default:
				if len(q) != 2 || q[0]["answer"] != "deny" || one.requests() != 0 {
					t.Errorf("no flag: questions %v, %d requests", q, one.requests())
				}
			}
		})
	}
	t.Run("not a host", func(t *testing.T) {
		e := newRunEnv(t)
		for _, bad := range []string{"http://example.com", "example.com:443", "*.example.com", ""} {
			code, _, stderr := e.run("--allow-host", bad, "hi")
			if code != 2 || !strings.Contains(stderr, "--allow-host") || strings.Contains(stderr, "invalid value") {
				t.Errorf("--allow-host %q: exit %d\n%s", bad, code, stderr)
			}
		}
	})
}

// anthropicThroughProxy makes https://api.anthropic.com reach the fake provider without the network: an HTTPS proxy
// on 127.0.0.1 that answers every CONNECT itself with a certificate for api.anthropic.com (trusted through
// SSL_CERT_FILE) and hands the requests to the provider. It returns the environment that points garuda at it.
func anthropicThroughProxy(t *testing.T, provider string) []string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "api.anthropic.com"},
		DNSNames: []string{"api.anthropic.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	target := strings.TrimPrefix(provider, "http://")
	ln := testenv.Serve(t, "tcp", "127.0.0.1:0", func(conn net.Conn) {
		defer conn.Close()
		br := bufio.NewReader(conn)
		req, err := http.ReadRequest(br)
		if err != nil || req.Method != http.MethodConnect || req.Host != "api.anthropic.com:443" {
			io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\n\r\n")
			return
		}
		io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
		tc := tls.Server(&bufferedConn{conn, br}, cfg)
		up, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer up.Close()
		go io.Copy(up, tc)
		io.Copy(tc, up)
	})
	return []string{"HTTPS_PROXY=http://" + ln.Addr().String(), "SSL_CERT_FILE=" + certFile}
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// --allow-web-search answers the session's web search consent, so that the model request offers Anthropic's
// web_search tool. Web search exists only on Anthropic's own API: the provider here is api.anthropic.com, reached
// through a local proxy. The controls: without the flag the consent is denied and the request offers no search;
// with the flag, a team policy that denies web search is not asked and offers none.
func TestRunAllowWebSearch(t *testing.T) {
	for _, c := range []struct {
		name, team string
		flag, want bool
	}{
		{"allowed", "", true, true},
		{"no flag", "", false, false},
		{"team policy denies it", `{"permissions":{"deny":["web_search"]}}`, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newRunEnv(t, fakeprovider.Turn{Text: "searched"})
			e.env = anthropicThroughProxy(t, e.provider.URL)
			models := `{"default":"fake","providers":{"anthropic":{"type":"anthropic","base_url":"https://api.anthropic.com",` +
				`"api_key_env":"LOCAL_API_KEY"}},"models":{"fake":{"provider":"anthropic","id":"fake-model"}}}`
			if err := os.WriteFile(filepath.Join(e.home, "models.json"), []byte(models), 0o600); err != nil {
				t.Fatal(err)
			}
			if c.team != "" {
				e.teamPolicy(c.team)
			}
			args := []string{"--json", "search the web"}
			if c.flag {
				args = append(args, "--allow-web-search")
			}
			qs := e.questions(args...)
			if len(e.provider.Requests()) != 1 {
				t.Fatalf("the provider got %d requests", len(e.provider.Requests()))
			}
			offered := e.provider.LastBodyContains(`"web_search_20250305"`)
			if offered != c.want {
				t.Errorf("web search offered: %v, want %v; questions %v", offered, c.want, qs)
			}
			switch {
			case c.team != "":
				if len(qs) != 0 {
					t.Errorf("team policy denies web search, yet asked: %v", qs)
				}
			case c.flag:
				if len(qs) != 1 || qs[0]["consentKind"] != "web_search" || qs[0]["answer"] != "once" || qs[0]["by"] != "--allow-web-search" {
					t.Errorf("questions: %v", qs)
				}
			default:
				if len(qs) != 1 || qs[0]["answer"] != "deny" || !strings.Contains(str(qs[0], "by"), "--allow-web-search would") {
					t.Errorf("questions: %v", qs)
				}
			}
		})
	}
}
