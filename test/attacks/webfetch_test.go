package attacks

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

func fetchOp(url string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_WebFetch{WebFetch: &execv1.WebFetch{Url: url}}}
}

// webServer serves a page, redirects, and a body that never ends, on 127.0.0.1.
func webServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><h1>Garuda docs</h1><p>Read <a href="/more">more</a>.</p></body></html>`)
		case strings.HasPrefix(r.URL.Path, "/to/"):
			http.Redirect(w, r, "http://"+strings.TrimPrefix(r.URL.Path, "/to/"), http.StatusFound)
		case r.URL.Path == "/endless":
			w.Header().Set("Content-Type", "text/plain")
			chunk := []byte(strings.Repeat("y", 64<<10))
			for { // 10 GB, or until the reader stops
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

// web_fetch reads a page as Markdown when a rule names the host; without one it asks, and a no is a denial.
func TestWebFetchPage(t *testing.T) {
	e := newEnv(t)
	srv, _ := webServer(t)
	c := e.client()
	sid := e.open(c)
	// The negative control first: no rule, a question ("Fetch <url>"), denied.
	res, qs, err := run(t, start(t, c, ctx(t), sid, fetchOp(srv.URL+"/page")), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 1 || qs[0].GetTitle() != "Fetch "+srv.URL+"/page" ||
		qs[0].GetKind() != "network" {
		t.Fatalf("without a rule: %v, questions %v, %v", res, qs, err)
	}
	mustWrite(t, filepath.Join(e.home, "settings.json"), `{"permissions":{"allow":["web_fetch(domain:127.0.0.1)"]}}`)
	sid = e.open(c)
	res, qs, err = run(t, start(t, c, ctx(t), sid, fetchOp(srv.URL+"/page")), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 ||
		!strings.Contains(res.GetContent(), "# Garuda docs") || !strings.Contains(res.GetContent(), "[more]("+srv.URL+"/more)") {
		t.Fatalf("with the rule: %v, questions %v, %v", res, qs, err)
	}
	// A body that never ends is cut at 10 MiB and bounded like command output.
	res, _, err = run(t, start(t, c, ctx(t), sid, fetchOp(srv.URL+"/endless")), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "only its first 10 MiB") ||
		len(res.GetContent()) > 40000 || !strings.Contains(res.GetContent(), "bytes cut; full output in") {
		t.Fatalf("endless body: %d bytes, %.300q, %v", len(res.GetContent()), res.GetContent(), err)
	}
	var fetches, decisions int
	for _, r := range auditRecords(t, e.home) {
		switch {
		case r.Event == "fetch" && r.Detail["address"] != "" && strings.HasPrefix(r.Input, srv.URL):
			fetches++
		case r.Event == "decision" && r.Op == "web_fetch" && r.Input == "127.0.0.1":
			decisions++
		}
	}
	if fetches != 2 || decisions != 3 {
		t.Errorf("audit: %d fetch records, %d decisions; want 2 and 3", fetches, decisions)
	}
}

// The SSRF cases of issue 22: each refused with a clear message, and each negative control shows the same target
// reached where a rule names the exact host.
func TestWebFetchSSRF(t *testing.T) {
	e := newEnv(t)
	srv, port := webServer(t)
	// Every host allowed by a wildcard (which opens no private address), and 127.0.0.1 by name.
	mustWrite(t, filepath.Join(e.home, "settings.json"), `{"permissions":{"allow":["web_fetch","web_fetch(domain:127.0.0.1)"]}}`)
	c := e.client()
	sid := e.open(c)
	for _, tc := range []struct{ url, want string }{
		{"file:///etc/passwd", "only http and https"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://localhost:" + port + "/page", "resolves to 127.0.0.1, a loopback address"},
		{srv.URL + "/to/localhost:" + port + "/page", "resolves to 127.0.0.1"},
		{"http://[::ffff:7f00:1]:" + port + "/page", ""}, // the negative control: it is 127.0.0.1, which a rule names
		{"http://2130706433:" + port + "/page", "decimal, octal"},
		{"http://0177.0.0.1:" + port + "/page", "decimal, octal"},
		{"http://0.0.0.0:" + port + "/page", "never dialled"},
		{"http://[fd00::1]:" + port + "/", "a private address"},
		{"http://[fe80::1]:" + port + "/", "a link-local address"},
		{"http://127.0.0.1\u200b:" + port + "/page", "invisible"},
		{"http://[::]:" + port + "/", "never dialled"},
	} {
		res, qs, err := run(t, start(t, c, ctx(t), sid, fetchOp(tc.url)), execv1.Choice_CHOICE_DENY)
		switch {
		case err != nil || len(qs) != 0:
			t.Errorf("%s: %v, questions %v", tc.url, err, qs)
		case tc.want == "" && (res.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "# Garuda docs")):
			t.Errorf("%s: %v, want the page", tc.url, res)
		case tc.want != "" && (res.GetStatus() == execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), tc.want)):
			t.Errorf("%s: %v, want a refusal with %q", tc.url, res, tc.want)
		}
	}
	// The negative control of the name that resolves to loopback: a rule naming localhost opens it.
	mustWrite(t, filepath.Join(e.home, "settings.json"),
		`{"permissions":{"allow":["web_fetch(domain:localhost)","web_fetch(domain:127.0.0.1)"]}}`)
	sid = e.open(c)
	for _, u := range []string{"http://localhost:" + port + "/page", srv.URL + "/to/localhost:" + port + "/page"} {
		res, _, err := run(t, start(t, c, ctx(t), sid, fetchOp(u)), execv1.Choice_CHOICE_DENY)
		if err != nil || !strings.Contains(res.GetContent(), "# Garuda docs") {
			t.Errorf("%s with a rule naming localhost: %v %v", u, res, err)
		}
	}
}

// A redirect to another host is decided again: asked where the policy asks, refused where it denies, and the
// first host's rule does not carry over.
func TestWebFetchRedirectDecidedAgain(t *testing.T) {
	e := newEnv(t)
	srv, port := webServer(t)
	mustWrite(t, filepath.Join(e.home, "settings.json"), `{"permissions":{"allow":["web_fetch(domain:127.0.0.1)"]}}`)
	c := e.client()
	sid := e.open(c)
	hop := srv.URL + "/to/localhost:" + port + "/page"
	res, qs, err := run(t, start(t, c, ctx(t), sid, fetchOp(hop)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 1 ||
		qs[0].GetTitle() != "Fetch http://localhost:"+port+"/page" || !strings.Contains(qs[0].GetPreview(), "redirects to") {
		t.Fatalf("a redirect to an unknown host: %v, questions %v, %v", res, qs, err)
	}
	// Allowed once: a question about that exact host, so its loopback address is opened.
	res, _, err = run(t, start(t, c, ctx(t), sid, fetchOp(hop)), execv1.Choice_CHOICE_ONCE)
	if err != nil || !strings.Contains(res.GetContent(), "# Garuda docs") {
		t.Fatalf("the redirect allowed once: %v %v", res, err)
	}
	mustWrite(t, filepath.Join(e.home, "settings.json"),
		`{"permissions":{"allow":["web_fetch(domain:127.0.0.1)"],"deny":["web_fetch(domain:localhost)"]}}`)
	sid = e.open(c)
	res, qs, err = run(t, start(t, c, ctx(t), sid, fetchOp(hop)), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 0 ||
		!strings.Contains(res.GetContent(), "redirects to http://localhost") {
		t.Fatalf("a redirect to a denied host: %v, questions %v, %v", res, qs, err)
	}
	var denied bool
	for _, r := range auditRecords(t, e.home) {
		denied = denied || r.Event == "decision" && r.Input == "localhost" && r.Verdict == "deny"
	}
	if !denied {
		t.Error("the redirect's denial is not in the audit log")
	}
}

// The web search consent is a question by default, a rule allows or denies it, and it is audited.
func TestWebSearchConsent(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	op := func() *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_WebSearchConsent{WebSearchConsent: &execv1.WebSearchConsent{}}}
	}
	sid := e.open(c)
	res, qs, err := run(t, start(t, c, ctx(t), sid, op()), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 1 || qs[0].GetTitle() != "Search the web" {
		t.Fatalf("by default: %v, questions %v, %v", res, qs, err)
	}
	mustWrite(t, filepath.Join(e.home, "settings.json"), `{"permissions":{"allow":["web_search"]}}`)
	sid = e.open(c)
	if res, qs, err := run(t, start(t, c, ctx(t), sid, op()), execv1.Choice_CHOICE_DENY); err != nil ||
		res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 {
		t.Fatalf("allowed by a rule: %v, questions %v, %v", res, qs, err)
	}
	mustWrite(t, filepath.Join(e.home, "settings.json"), `{"permissions":{"deny":["web_search"]}}`)
	sid = e.open(c)
	if res, qs, err := run(t, start(t, c, ctx(t), sid, op()), execv1.Choice_CHOICE_ONCE); err != nil ||
		res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 0 {
		t.Fatalf("denied by a rule: %v, questions %v, %v", res, qs, err)
	}
	var decisions int
	for _, r := range auditRecords(t, e.home) {
		if r.Event == "decision" && r.Op == "web_search" {
			decisions++
		}
	}
	if decisions != 3 {
		t.Errorf("%d web_search decisions audited, want 3", decisions)
	}
}

// A host the policy denies is refused before anything of it is looked up or dialled: the server it names sees no
// connection (control: with the host allowed it sees one).
func TestWebFetchDeniedHostIsNeverDialled(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 16)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hi") }),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				accepted <- struct{}{}
			}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String() + "/"
	c := e.client()
	for _, tc := range []struct {
		settings string
		dialled  bool
	}{
		{`{"permissions":{"deny":["network(domain:127.0.0.1)"]}}`, false},
		{`{"permissions":{"allow":["network(domain:127.0.0.1)"]}}`, true},
	} {
		mustWrite(t, filepath.Join(e.home, "settings.json"), tc.settings)
		sid := e.open(c)
		res, _, err := run(t, start(t, c, ctx(t), sid, fetchOp(url)), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatal(err)
		}
		got := false
		select {
		case <-accepted:
			got = true
		default:
		}
		if got != tc.dialled || (res.GetStatus() == execv1.Status_STATUS_COMPLETED) != tc.dialled {
			t.Errorf("%s: dialled %v, %v", tc.settings, got, res)
		}
	}
}
