package broker_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// web_fetch reads a page as Markdown when a rule names the host; without one it asks, and a no is a denial.
func TestWebFetchPage(t *testing.T) {
	e := brokertest.New(t)
	srv, _ := brokertest.WebServer(t)
	c := e.Client()
	sid := e.Open(c)
	// The negative control first: no rule, a question ("Fetch <url>"), denied.
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(srv.URL+"/page")),
		execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 1 || qs[0].GetTitle() != "Fetch "+srv.URL+"/page" ||
		qs[0].GetKind() != "network" {
		t.Fatalf("without a rule: %v, questions %v, %v", res, qs, err)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["web_fetch(domain:127.0.0.1)"]}}`)
	sid = e.Open(c)
	res, qs, err = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(srv.URL+"/page")),
		execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 ||
		!strings.Contains(res.GetContent(), "# Garuda docs") || !strings.Contains(res.GetContent(), "[more]("+srv.URL+"/more)") {
		t.Fatalf("with the rule: %v, questions %v, %v", res, qs, err)
	}
	// A body that never ends is cut at 10 MiB and bounded like command output.
	res, _, err = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.FetchOp(srv.URL+"/endless")),
		execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(res.GetContent(), "only its first 10 MiB") ||
		len(res.GetContent()) > 40000 || !strings.Contains(res.GetContent(), "bytes cut; full output in") {
		t.Fatalf("endless body: %d bytes, %.300q, %v", len(res.GetContent()), res.GetContent(), err)
	}
	var fetches, decisions int
	for _, r := range brokertest.AuditRecords(t, e.Home) {
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

// The web search consent is a question by default, a rule allows or denies it, and it is audited.
func TestWebSearchConsent(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	op := func() *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_WebSearchConsent{WebSearchConsent: &execv1.WebSearchConsent{}}}
	}
	sid := e.Open(c)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op()), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 1 || qs[0].GetTitle() != "Search the web" {
		t.Fatalf("by default: %v, questions %v, %v", res, qs, err)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"allow":["web_search"]}}`)
	sid = e.Open(c)
	if res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op()), execv1.Choice_CHOICE_DENY); err != nil ||
		res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 {
		t.Fatalf("allowed by a rule: %v, questions %v, %v", res, qs, err)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"deny":["web_search"]}}`)
	sid = e.Open(c)
	if res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op()), execv1.Choice_CHOICE_ONCE); err != nil ||
		res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 0 {
		t.Fatalf("denied by a rule: %v, questions %v, %v", res, qs, err)
	}
	var decisions int
	for _, r := range brokertest.AuditRecords(t, e.Home) {
		if r.Event == "decision" && r.Op == "web_search" {
			decisions++
		}
	}
	if decisions != 3 {
		t.Errorf("%d web_search decisions audited, want 3", decisions)
	}
}
