package acpagent

import (
	"context"

	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// offerWebSearch decides whether this turn's model requests offer the provider's server-side web search: only where
// the provider runs one (Anthropic's own API), and only as the broker's policy says (a web_search rule, else the
// user's answer to a question asked once per session, at its first prompt, before the model request that would
// offer the tool). A denial leaves the tool out; a cancelled question is asked again at the next prompt.
func (s *acpSession) offerWebSearch(ctx context.Context) {
	s.conv.WebSearch = false
	if ws, ok := s.conv.Model.(model.WebSearcher); !ok || !ws.SearchesWeb() {
		return
	}
	if !s.webSearchAsked {
		res, err := s.runner.Call(ctx, &execv1.Start{Op: &execv1.Start_WebSearchConsent{WebSearchConsent: &execv1.WebSearchConsent{}}}, nil)
		if ctx.Err() != nil {
			return
		}
		s.webSearchAsked = true
		s.webSearchOK = err == nil && res.GetStatus() == execv1.Status_STATUS_COMPLETED
	}
	s.conv.WebSearch = s.webSearchOK
}
