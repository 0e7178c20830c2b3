package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/netguard"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/broker/webfetch"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// netDialer is the broker's one way out to the network (web_fetch and the commands' proxy).
var netDialer = &netguard.Dialer{}

// webLimits are web_fetch's limits (tests shorten them).
var webLimits = webfetch.Limits{}

func checkWebFetch(s *Service, c *call) (*request, error) {
	raw := c.start.GetWebFetch().GetUrl()
	t, err := netguard.ParseURL(strings.TrimSpace(raw))
	if err != nil {
		// Refused from the URL alone: nothing to decide, nothing looked up; the model reads why.
		return &request{input: raw, run: func(context.Context, *grant) (*execv1.Result, error) {
			return failed(fmt.Errorf("web_fetch: %w", err)), nil
		}}, nil
	}
	return &request{
		// The host is decided here, from the URL alone: before any lookup or connection.
		policy: policy.Request{Kind: policy.KindNetwork, Tool: policy.OpWebFetch, Host: t.Host},
		input:  t.URL.String(),
		run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
			return s.webFetch(ctx, g, t)
		},
	}, nil
}

// errStop ends a fetch with a Result of its own (a redirect denied, or the user's no).
type errStop struct{ res *execv1.Result }

func (e errStop) Error() string { return e.res.GetContent() }

func (s *Service) webFetch(ctx context.Context, g *grant, first netguard.Target) (*execv1.Result, error) {
	c := g.c
	if res, err := g.confirm(fetchQuestion(first, nil)); res != nil || err != nil {
		return res, err
	}
	reached := map[string]netguard.Reach{first.Host: {Private: g.d.OpensPrivate}}
	var prev netguard.Target
	// Every hop after the first is a new request to the policy: decided (and audited) before its host is looked up,
	// asked when the policy says so, unless this fetch already had that host allowed.
	decide := func(_ context.Context, hop netguard.Target, n int) (netguard.Reach, error) {
		defer func() { prev = hop }()
		if n == 0 {
			return reached[hop.Host], nil
		}
		req := policy.Request{Kind: policy.KindNetwork, Tool: policy.OpWebFetch, Host: hop.Host}
		hg, deniedRes, err := s.decideAs(c, g.op, policy.OpWebFetch, req)
		switch {
		case err != nil:
			return netguard.Reach{}, err
		case deniedRes != nil:
			deniedRes.Content = fmt.Sprintf("Denied: %s redirects to %s, and %s", prev.URL, hop.URL,
				lowerFirst(strings.TrimPrefix(deniedRes.Content, "Denied: ")))
			return netguard.Reach{}, errStop{deniedRes}
		}
		if r, ok := reached[hop.Host]; ok && hg.d.Verdict == policy.Ask {
			return r, nil
		}
		if res, err := hg.confirm(fetchQuestion(hop, &prev)); res != nil || err != nil {
			if err != nil {
				return netguard.Reach{}, err
			}
			return netguard.Reach{}, errStop{res}
		}
		reached[hop.Host] = netguard.Reach{Private: hg.d.OpensPrivate}
		return reached[hop.Host], nil
	}
	var auditErr error
	onHop := func(h webfetch.Hop) {
		d := map[string]string{"status": fmt.Sprint(h.Status), "bytes": fmt.Sprint(h.Bytes)}
		if h.Address.IsValid() {
			d["address"] = h.Address.String()
		}
		if h.Err != nil {
			d["error"] = h.Err.Error()
		}
		if err := s.record(audit.Record{Session: c.sess.id, Event: audit.EventFetch, Op: policy.OpWebFetch, Input: h.URL,
			Detail: d}, false); err != nil {
			auditErr = err
		}
	}
	page, err := webfetch.Fetch(ctx, netDialer, first, decide, onHop, webLimits)
	if auditErr != nil {
		return nil, auditErr
	}
	if stop := (errStop{}); errors.As(err, &stop) {
		return stop.res, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return cancelled(), nil
		}
		return failed(fmt.Errorf("web_fetch %s: %w", first.URL, err)), nil
	}
	return s.pageResult(c, page), nil
}

// fetchQuestion is the question of one hop: "Fetch <url>", and for a redirect where it came from.
func fetchQuestion(t netguard.Target, from *netguard.Target) *execv1.Question {
	q := &execv1.Question{Title: "Fetch " + t.URL.String(), Preview: "Allow network access to " + t.Host + "?"}
	if from != nil {
		q.Preview = fmt.Sprintf("%s redirects to %s.\n%s", from.URL, t.URL, q.Preview)
	}
	return q
}

// pageResult is the page as the model gets it: where it came from, then its text, bounded like command output
// (the whole text saved in the session's output folder when cut).
func (s *Service) pageResult(c *call, p *webfetch.Page) *execv1.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nStatus: %d\nContent-Type: %s\n", p.URL, p.Status, p.ContentType)
	for _, n := range p.Notes {
		b.WriteString("Note: " + n + "\n")
	}
	b.WriteString("\n")
	path := filepath.Join(c.sess.outputDir, fmt.Sprintf("%s-%s.md", time.Now().UTC().Format("20060102T150405"), newID()[:6]))
	if len(p.Text) <= sandbox.KeepOutput || os.MkdirAll(c.sess.outputDir, 0o700) != nil {
		path = ""
	}
	body, _, err := sandbox.Bound([]byte(p.Text), path)
	if err != nil {
		body, _, _ = sandbox.Bound([]byte(p.Text), "")
	}
	b.WriteString(strings.ToValidUTF8(string(body), "\uFFFD"))
	res := &execv1.Result{Content: b.String()}
	if p.Status >= 400 {
		res.Status = execv1.Status_STATUS_FAILED
	}
	return res
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// checkWebSearchConsent is the consent to offer the provider's server-side web search for the session: the front
// end asks once per session, before the first model request that would offer the tool.
func checkWebSearchConsent(s *Service, c *call) (*request, error) {
	req := policy.Request{Kind: policy.KindConsent, Tool: policy.OpWebSearch, ConsentKind: policy.OpWebSearch, ConsentName: "provider"}
	return &request{policy: req, input: "web search", run: func(ctx context.Context, g *grant) (*execv1.Result, error) {
		q := &execv1.Question{Title: "Search the web",
			Preview: "Let the model search the web in this session? The model provider runs the searches: your " +
				"queries and their results go through it, not through Garuda's network policy."}
		if res, err := g.confirm(q); res != nil || err != nil {
			return res, err
		}
		return &execv1.Result{Content: "The model may search the web in this session."}, nil
	}}, nil
}
