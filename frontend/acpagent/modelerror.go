package acpagent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/garuda-dev/garuda/frontend/agent"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// modelError is the editor's error for a turn the model's provider ended: the provider's own message, then what
// to do about it. It is the one place where model errors become words.
func (s *acpSession) modelError(ctx context.Context, err error) *acp.RequestError {
	msg := strings.TrimSuffix(err.Error(), ".")
	name, id := s.model.GetName(), s.model.GetModelId()
	var retries *agent.RetriesError
	var se *model.StreamError
	switch {
	case errors.Is(err, model.ErrAuth):
		return authRequired(msg + ". Check the key, or run garuda setup.")
	case errors.Is(err, model.ErrNotFound):
		hint := fmt.Sprintf(". Garuda asked for the model id %q (model %s)", id, name)
		if known := s.knownModels(ctx); known != "" {
			hint += "; the models Garuda knows for " + s.model.GetProvider() + ": " + known
		}
		return requestError(msg + hint + ". Choose another with `garuda setup --model NAME`, or fix the id in models.json.")
	case errors.Is(err, model.ErrContextTooLong):
		return requestError(msg + ". Compaction could not make the conversation fit; start a new session, or choose a " +
			"model with a larger context window.")
	case errors.As(err, &retries) && retries.Wait > 0:
		return requestError(msg + ". Try again later.")
	case errors.As(err, &retries):
		return requestError(msg + ". The provider is unavailable or overloaded; try again in a few minutes.")
	case errors.As(err, &se) && se.Status >= 400:
		return requestError(msg + ". The provider refused the request, so Garuda does not send it again; " +
			"if a new prompt fails the same way, start a new session.")
	}
	return requestError(msg + ".")
}

// knownModels lists the catalog's models of the session's provider, or is empty when the broker does not say.
func (s *acpSession) knownModels(ctx context.Context) string {
	opts, err := s.srv.opts.Broker.SetupOptions(ctx, &execv1.SetupOptionsRequest{})
	if err != nil {
		return ""
	}
	for _, p := range opts.GetProviders() {
		if p.GetName() == s.model.GetProvider() && len(p.GetModels()) > 0 {
			return strings.Join(p.GetModels(), ", ")
		}
	}
	return ""
}
