package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/garuda-dev/garuda/internal/neterr"
)

type openaiClient struct {
	cfg         ProviderConfig
	completions openai.ChatCompletionService
	// official: the endpoint is OpenAI's own, which wants max_completion_tokens; compatible
	// servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter) know max_tokens.
	official bool
}

// NewOpenAI returns a Client for OpenAI chat completions, or for a compatible server at
// cfg.BaseURL (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter). It reads nothing from the
// environment.
func NewOpenAI(cfg ProviderConfig) Client {
	// The service is built without openai.NewClient, which would add OPENAI_* variables from
	// the environment (a key, an organization, headers) to requests bound for any base URL.
	opts := []option.RequestOption{option.WithEnvironmentProduction()}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	opts = append(opts, option.WithMaxRetries(0)) // one retry layer: the agent loop's (see ProviderConfig)
	return &openaiClient{
		cfg:         cfg,
		completions: openai.NewChatCompletionService(opts...),
		official:    cfg.BaseURL == "" || strings.Contains(cfg.BaseURL, "api.openai.com"),
	}
}

func (c *openaiClient) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(c.cfg.Model),
		Messages:      make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if c.official {
		p.MaxCompletionTokens = openai.Int(c.cfg.maxTokens(req))
	} else {
		p.MaxTokens = openai.Int(c.cfg.maxTokens(req))
	}
	if req.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, t := range req.Tools {
		var params map[string]any
		if err := json.Unmarshal(schemaOrObject(t.InputSchema), &params); err != nil {
			params = map[string]any{"type": "object"}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(params)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionToolUnionParam{OfFunction: &openai.ChatCompletionFunctionToolParam{Function: fn}})
	}
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			var (
				text  strings.Builder
				calls []openai.ChatCompletionMessageToolCallUnionParam
			)
			for _, b := range m.Content {
				switch b.Type {
				case BlockText:
					text.WriteString(b.Text)
				case BlockToolUse:
					in := b.Input
					if len(in) == 0 {
						in = emptyObject
					} else if !json.Valid(in) {
						return p, fmt.Errorf("tool call %s (%s) in the history: the input is not valid JSON", b.ToolUseID, b.Name)
					}
					calls = append(calls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       b.ToolUseID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: string(in)},
					}})
				}
			}
			if text.Len() == 0 && len(calls) == 0 {
				continue
			}
			a := openai.ChatCompletionAssistantMessageParam{ToolCalls: calls}
			if text.Len() > 0 {
				a.Content.OfString = openai.String(text.String())
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
			continue
		}
		// Tool results must follow the assistant's calls directly, so they go before the user's text.
		var text strings.Builder
		for _, b := range m.Content {
			switch b.Type {
			case BlockToolResult:
				content := b.Text
				if b.IsError && !strings.HasPrefix(content, "Error") {
					content = "Error: " + content
				}
				p.Messages = append(p.Messages, openai.ToolMessage(content, b.ToolUseID))
			case BlockText:
				if text.Len() > 0 {
					text.WriteString("\n")
				}
				text.WriteString(b.Text)
			}
		}
		if text.Len() > 0 {
			p.Messages = append(p.Messages, openai.UserMessage(text.String()))
		}
	}
	return p, nil
}

// Stream implements Client.
func (c *openaiClient) Stream(ctx context.Context, req Request, h Handler) (*Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, &StreamError{Err: fmt.Errorf("openai: %w", err)}
	}
	stream := c.completions.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		resp     = &Response{Message: Message{Role: RoleAssistant}}
		text     []byte
		thinking []byte
		calls    []openaiCall // by the delta's index
		finish   string
		started  bool
		refusal  bool
	)
	for stream.Next() {
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() && chunk.Usage.PromptTokens+chunk.Usage.CompletionTokens > 0 {
			u := chunk.Usage
			resp.Usage = Usage{
				InputTokens:      int(u.PromptTokens),
				OutputTokens:     int(u.CompletionTokens),
				CacheReadTokens:  int(u.PromptTokensDetails.CachedTokens),
				CacheWriteTokens: int(u.PromptTokensDetails.CacheWriteTokens),
			}
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		d := ch.Delta
		if r := reasoningDelta(d); r != "" {
			thinking = append(thinking, r...)
			h.Delta(DeltaThinking, r)
			started = true
		}
		if d.Content != "" {
			text = append(text, d.Content...)
			h.Delta(DeltaText, d.Content)
			started = true
		}
		if d.Refusal != "" {
			refusal = true
			text = append(text, d.Refusal...)
			h.Delta(DeltaText, d.Refusal)
			started = true
		}
		for _, tc := range d.ToolCalls {
			i := int(tc.Index)
			// A broken or hostile endpoint must not crash the front end or make it allocate without bound.
			if i < 0 || i > maxBlocks {
				return nil, &StreamError{Err: fmt.Errorf("openai: tool call index %d out of range", i), Started: started}
			}
			for i >= len(calls) {
				calls = append(calls, openaiCall{})
			}
			if tc.ID != "" {
				calls[i].id = tc.ID
			}
			if tc.Function.Name != "" {
				calls[i].name += tc.Function.Name
			}
			calls[i].args = append(calls[i].args, tc.Function.Arguments...)
			calls[i].seen = true
		}
		if ch.FinishReason != "" {
			finish = ch.FinishReason
		}
	}
	if err := stream.Err(); err != nil {
		return nil, openaiError(ctx, err, started)
	}
	if finish == "" {
		// The connection ended with no finish_reason: the answer is cut short.
		return nil, &StreamError{Err: errors.New("openai: the stream ended without a finish_reason"), Started: started,
			Retryable: ctx.Err() == nil}
	}
	if len(thinking) > 0 {
		resp.Message.Content = append(resp.Message.Content, Block{Type: BlockThinking, Text: string(thinking)})
	}
	if len(text) > 0 {
		resp.Message.Content = append(resp.Message.Content, Block{Type: BlockText, Text: string(text)})
	}
	for i, tc := range calls {
		if !tc.seen {
			continue
		}
		in, err := toolInput(tc.args, tc.name)
		if err != nil {
			return nil, &StreamError{Err: fmt.Errorf("openai: %w", err), Started: started, Retryable: true}
		}
		id := tc.id
		if id == "" { // some local servers send no id
			id = fmt.Sprintf("call_%d", i)
		}
		resp.Message.Content = append(resp.Message.Content, Block{Type: BlockToolUse, ToolUseID: id, Name: tc.name, Input: in})
	}
	switch {
	case refusal || finish == "content_filter":
		resp.StopReason = StopRefusal
	case finish == "length":
		resp.StopReason = StopMaxTokens
	case finish == "tool_calls" || finish == "function_call" || len(calls) > 0:
		resp.StopReason = StopToolUse
	default:
		resp.StopReason = StopEndTurn
	}
	return resp, nil
}

type openaiCall struct {
	id, name string
	args     []byte
	seen     bool
}

// reasoningDelta returns the thinking text of a delta: reasoning_content (DeepSeek, vLLM,
// llama.cpp, LM Studio) or reasoning (OpenRouter, Ollama).
func reasoningDelta(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, key := range [...]string{"reasoning_content", "reasoning"} {
		f, ok := d.JSON.ExtraFields[key]
		if !ok {
			continue
		}
		raw := f.Raw()
		if len(raw) < 2 || raw[0] != '"' {
			continue
		}
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// openaiError turns an SDK error into ErrAuth, ErrContextTooLong or a StreamError; every
// result is a *StreamError.
func openaiError(ctx context.Context, err error, started bool) error {
	if ctx.Err() != nil {
		return &StreamError{Err: ctx.Err(), Started: started}
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error object inside the stream.
		msg := providerMessage(string(se.Event.Data))
		var env struct {
			Error struct {
				Type string `json:"type"`
				Code any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &env)
		kind := strings.ToLower(env.Error.Type + " " + fmt.Sprint(env.Error.Code))
		switch {
		case contextTooLong(msg) || strings.Contains(kind, "context_length"):
			return &StreamError{Err: fmt.Errorf("%w: openai said: %s", ErrContextTooLong, msg), Started: started}
		case strings.Contains(kind, "auth") || strings.Contains(kind, "401") || strings.Contains(kind, "403"):
			return &StreamError{Err: fmt.Errorf("%w: openai said: %s", ErrAuth, msg), Started: started}
		}
		retryable := !strings.Contains(kind, "invalid_request")
		return &StreamError{Err: fmt.Errorf("openai: error in the stream: %s", msg), Started: started, Retryable: retryable}
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		// No API answer: the connection failed or broke.
		return &StreamError{Err: fmt.Errorf("openai: %w", neterr.Wrap(err)), Started: started, Retryable: !neterr.Permanent(err)}
	}
	msg := apiErr.Message
	if msg == "" {
		msg = providerMessage(apiErr.RawJSON())
	}
	var h http.Header
	if apiErr.Response != nil {
		h = apiErr.Response.Header
	}
	return httpError("openai", apiErr.StatusCode, h, msg, started, false, apiErr.Code == "context_length_exceeded",
		apiErr.Code == "model_not_found")
}
