package attacks

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// The SSRF cases of issue 22: each refused with a clear message, and each negative control shows the same target
// reached where a rule names the exact host.
func TestWebFetchSSRF(t *testing.T) {
	e := brokertest.New(t)
	srv, port := brokertest.WebServer(t)
	// Every host allowed by a wildcard (which opens no private address), and 127.0.0.1 by name.
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["web_fetch","web_fetch(domain:127.0.0.1)"]}}`)
	c := e.Client()
	sid := e.Open(c)
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
		res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(tc.url)), execv1.Choice_CHOICE_DENY)
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
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"),
		`{"permissions":{"allow":["web_fetch(domain:localhost)","web_fetch(domain:127.0.0.1)"]}}`)

	sid = e.Open(c)
	for _, u := range []string{"http://localhost:" + port + "/page", srv.URL + "/to/localhost:" + port + "/page"} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(u)), execv1.Choice_CHOICE_DENY)
		if err != nil || !strings.Contains(res.GetContent(), "# Garuda docs") {
			t.Errorf("%s with a rule naming localhost: %v %v", u, res, err)
		}
	}
}

// A redirect to another host is decided again: asked where the policy asks, refused where it denies, and the
// first host's rule does not carry over.
func TestWebFetchRedirectDecidedAgain(t *testing.T) {
	e := brokertest.New(t)
	srv, port := brokertest.WebServer(t)
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["web_fetch(domain:127.0.0.1)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	hop := srv.URL + "/to/localhost:" + port + "/page"
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(hop)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 1 ||
		qs[0].GetTitle() != "Fetch http://localhost:"+port+"/page" || !strings.Contains(qs[0].GetPreview(), "redirects to") {
		t.Fatalf("a redirect to an unknown host: %v, questions %v, %v", res, qs, err)
	}
	// Allowed once: a question about that exact host, so its loopback address is opened.
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(hop)), execv1.Choice_CHOICE_ONCE)
	if err != nil || !strings.Contains(res.GetContent(), "# Garuda docs") {
		t.Fatalf("the redirect allowed once: %v %v", res, err)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"),
		`{"permissions":{"allow":["web_fetch(domain:127.0.0.1)"],"deny":["web_fetch(domain:localhost)"]}}`)

	sid = e.Open(c)
	res, qs, err = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(hop)), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 0 ||
		!strings.Contains(res.GetContent(), "redirects to http://localhost") {
		t.Fatalf("a redirect to a denied host: %v, questions %v, %v", res, qs, err)
	}
	var denied bool
	for _, r := range brokertest.AuditRecords(t, e.Home) {
		denied = denied || r.Event == "decision" && r.Input == "localhost" && r.Verdict == "deny"
	}
	if !denied {
		t.Error("the redirect's denial is not in the audit log")
	}
}

// A host the policy denies is refused before anything of it is looked up or dialled: the server it names sees no
// connection (control: with the host allowed it sees one).
func TestWebFetchDeniedHostIsNeverDialled(t *testing.T) {
	e := brokertest.New(t)
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
	c := e.Client()
	for _, tc := range []struct {
		settings string
		dialled  bool
	}{
		{`{"permissions":{"deny":["network(domain:127.0.0.1)"]}}`, false},
		{`{"permissions":{"allow":["network(domain:127.0.0.1)"]}}`, true},
	} {
		brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), tc.settings)
		sid := e.Open(c)
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(url)), execv1.Choice_CHOICE_ONCE)
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
