package model

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/garuda-dev/garuda/internal/neterr"
)

type anthropicClient struct {
	cfg  ProviderConfig
	msgs anthropic.MessageService
}

// NewAnthropic returns a Client for the Anthropic Messages API (or a compatible endpoint at
// cfg.BaseURL). It reads nothing from the environment: the key, base URL and model come from cfg.
func NewAnthropic(cfg ProviderConfig) Client {
	opts := []option.RequestOption{
		// The front end resolves keys itself: the SDK must not pick up ANTHROPIC_* variables
		// or profile files and send a key the user did not choose to this endpoint.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	opts = append(opts, option.WithMaxRetries(0)) // one retry layer: the agent loop's (see ProviderConfig)
	c := anthropic.NewClient(opts...)
	return &anthropicClient{cfg: cfg, msgs: c.Messages}
}

// SearchesWeb implements WebSearcher: Anthropic's own API runs web_search; an Anthropic-compatible endpoint elsewhere
// may not know the tool.
func (c *anthropicClient) SearchesWeb() bool {
	if c.cfg.BaseURL == "" {
		return true
	}
	u, err := url.Parse(c.cfg.BaseURL)
	return err == nil && u.Hostname() == "api.anthropic.com"
}

func (c *anthropicClient) params(req Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(c.cfg.Model),
		MaxTokens: c.cfg.maxTokens(req),
		Messages:  make([]anthropic.MessageParam, 0, len(req.Messages)),
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	if req.ThinkingBudget > 0 {
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(req.ThinkingBudget))
		if p.MaxTokens <= int64(req.ThinkingBudget) { // the API wants room for the answer after the thinking
			p.MaxTokens = int64(req.ThinkingBudget) + DefaultMaxOutputTokens
		}
	}
	for _, t := range req.Tools {
		tp := &anthropic.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schemaOrObject(t.InputSchema)),
		}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}
	if n := len(p.Tools); n > 0 {
		p.Tools[n-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	if req.WebSearch {
		p.Tools = append(p.Tools,
			anthropic.ToolUnionParam{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{MaxUses: anthropic.Int(maxSearches)}})
	}
	wire := make([]wireMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		wm := wireMessage{Role: "user", Content: make([]wireBlock, 0, len(m.Content))}
		if m.Role == RoleAssistant {
			wm.Role = "assistant"
		}
		for i := range m.Content {
			b := &m.Content[i]
			switch b.Type {
			case BlockText:
				if b.Text != "" { // the API refuses empty text blocks
					wb := wireBlock{Type: "text", Text: &b.Text}
					if req.WebSearch && len(b.Citations) > 0 && json.Valid(b.Citations) {
						wb.Citations = b.Citations
					}
					wm.Content = append(wm.Content, wb)
				}
			case BlockServerToolUse, BlockWebSearchResult:
				// A search and its result go back as they came, while the request offers the search; a request
				// without the tool leaves them out (and the citations that point into them), keeping the text.
				if !req.WebSearch {
					continue
				}
				if b.Type == BlockServerToolUse {
					in := b.Input
					if len(in) == 0 || !json.Valid(in) {
						in = emptyObject
					}
					wm.Content = append(wm.Content, wireBlock{Type: string(b.Type), ID: b.ToolUseID, Name: b.Name, Input: in})
				} else if len(b.Result) > 0 && json.Valid(b.Result) {
					wm.Content = append(wm.Content, wireBlock{Type: string(b.Type), ToolUseID: b.ToolUseID, Content: b.Result})
				}
			case BlockThinking:
				wm.Content = append(wm.Content, wireBlock{Type: "thinking", Thinking: &b.Text, Signature: &b.Signature})
			case BlockRedactedThinking:
				wm.Content = append(wm.Content, wireBlock{Type: "redacted_thinking", Data: b.Data})
			case BlockToolUse:
				in := b.Input
				if len(in) == 0 {
					in = emptyObject
				} else if !json.Valid(in) {
					return p, fmt.Errorf("tool call %s (%s) in the history: the input is not valid JSON", b.ToolUseID, b.Name)
				}
				wm.Content = append(wm.Content, wireBlock{Type: "tool_use", ID: b.ToolUseID, Name: b.Name, Input: in})
			case BlockToolResult:
				content, err := json.Marshal(b.Text)
				if err != nil {
					return p, fmt.Errorf("tool result %s in the history: %w", b.ToolUseID, err)
				}
				wm.Content = append(wm.Content, wireBlock{Type: "tool_result", ToolUseID: b.ToolUseID, Content: content, IsError: b.IsError})
			}
		}
		switch {
		case len(wm.Content) == 0:
		case len(wire) > 0 && wire[len(wire)-1].Role == wm.Role:
			// Two messages of one role in a row (an answer the provider paused, then its continuation) are one turn.
			wire[len(wire)-1].Content = append(wire[len(wire)-1].Content, wm.Content...)
		default:
			wire = append(wire, wm)
		}
	}
	// Prompt caching: the system prompt, the tools and the history up to the last block are
	// cached, so each step of a turn pays full price only for what is new.
	if n := len(wire); n > 0 {
		last := &wire[n-1].Content[len(wire[n-1].Content)-1]
		if last.Type == "text" || last.Type == "tool_result" {
			last.CacheControl = &ephemeral
		}
	}
	for _, wm := range wire {
		p.Messages = append(p.Messages, param.Override[anthropic.MessageParam](wm))
	}
	return p, nil
}

// wireMessage and wireBlock are the history in the Messages API's JSON. They are encoded with
// encoding/json and handed to the SDK as they are (param.Override): the SDK's reflective param
// encoder takes several times as long on a long history.
type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    *string         `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"` // a tool_result's text (a JSON string), a search result's content
	Citations    json.RawMessage `json:"citations,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	CacheControl *wireCache      `json:"cache_control,omitempty"`
}

type wireCache struct {
	Type string `json:"type"`
}

var ephemeral = wireCache{Type: "ephemeral"}

func schemaOrObject(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}

// Stream implements Client.
func (c *anthropicClient) Stream(ctx context.Context, req Request, h Handler) (*Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, &StreamError{Err: fmt.Errorf("anthropic: %w", err)}
	}
	stream := c.msgs.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		resp    = &Response{Message: Message{Role: RoleAssistant}}
		blocks  []anthropicBlock
		started bool
		stopped bool
	)
	// say adds streamed text or thinking to its block and shows it as it comes.
	say := func(b *anthropicBlock, kind DeltaKind, s string) {
		b.text = append(b.text, s...)
		h.Delta(kind, s)
		started = true
	}
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			resp.Usage = Usage{
				InputTokens:      int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
				OutputTokens:     int(u.OutputTokens),
				CacheReadTokens:  int(u.CacheReadInputTokens),
				CacheWriteTokens: int(u.CacheCreationInputTokens),
			}
		case "content_block_start":
			// A broken or hostile endpoint must not crash the front end or make it allocate without bound.
			if ev.Index < 0 || ev.Index > maxBlocks {
				return nil, &StreamError{Err: fmt.Errorf("anthropic: content block index %d out of range", ev.Index), Started: started}
			}
			cb := ev.ContentBlock
			b := anthropicBlock{}
			switch cb.Type {
			case "text":
				b.Block = Block{Type: BlockText}
				if raw := cb.JSON.Citations.Raw(); strings.HasPrefix(raw, "[") && raw != "[]" {
					b.cites = append(b.cites, json.RawMessage(raw))
				}
				if cb.Text != "" {
					say(&b, DeltaText, cb.Text)
				}
			case "thinking":
				b.Block = Block{Type: BlockThinking, Signature: cb.Signature}
				if cb.Thinking != "" {
					say(&b, DeltaThinking, cb.Thinking)
				}
			case "redacted_thinking":
				b.Block = Block{Type: BlockRedactedThinking, Data: cb.Data}
			case "tool_use":
				b.Block = Block{Type: BlockToolUse, ToolUseID: cb.ID, Name: cb.Name}
			case "server_tool_use":
				// The provider's own tool (web search): shown as it runs, and kept to be sent back.
				b.Block = Block{Type: BlockServerToolUse, ToolUseID: cb.ID, Name: cb.Name}
				b.server = true
			case "web_search_tool_result":
				ev, content := searchResult(cb.RawJSON())
				b.Block = Block{Type: BlockWebSearchResult, ToolUseID: ev.ID, Result: content}
				if sh, ok := h.(ServerToolHandler); ok {
					sh.ServerTool(ev)
				}
			default:
				b.skip = true // server tools and other blocks Garuda does not use
			}
			for int(ev.Index) >= len(blocks) {
				blocks = append(blocks, anthropicBlock{skip: true})
			}
			blocks[ev.Index] = b
		case "content_block_delta":
			if ev.Index < 0 || int(ev.Index) >= len(blocks) || blocks[ev.Index].skip {
				continue
			}
			b := &blocks[ev.Index]
			d := ev.Delta
			switch d.Type {
			case "text_delta":
				say(b, DeltaText, d.Text)
			case "thinking_delta":
				say(b, DeltaThinking, d.Thinking)
			case "signature_delta":
				b.Signature += d.Signature
			case "input_json_delta":
				b.text = append(b.text, d.PartialJSON...)
			case "citations_delta":
				if raw := d.JSON.Citation.Raw(); b.Type == BlockText && strings.HasPrefix(raw, "{") {
					b.cites = append(b.cites, json.RawMessage(raw))
				}
			}
		case "content_block_stop":
			// Blocks are finished after the loop, so a block that never saw its stop is still kept.
			if ev.Index >= 0 && int(ev.Index) < len(blocks) && blocks[ev.Index].server {
				if sh, ok := h.(ServerToolHandler); ok {
					b := &blocks[ev.Index]
					var in struct {
						Query string `json:"query"`
					}
					_ = json.Unmarshal(b.text, &in)
					sh.ServerTool(ServerToolEvent{ID: b.ToolUseID, Name: b.Name, Query: in.Query})
				}
			}
		case "message_delta":
			resp.StopReason = anthropicStop(ev.Delta.StopReason)
			u := ev.Usage
			if u.OutputTokens > 0 {
				resp.Usage.OutputTokens = int(u.OutputTokens)
			}
			if in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens; in > 0 {
				resp.Usage.InputTokens = int(in)
				resp.Usage.CacheReadTokens = int(u.CacheReadInputTokens)
				resp.Usage.CacheWriteTokens = int(u.CacheCreationInputTokens)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, anthropicError(ctx, err, started)
	}
	if !stopped {
		// The connection ended without message_stop: the answer is cut short.
		return nil, &StreamError{Err: errors.New("anthropic: the stream ended before message_stop"), Started: started,
			Retryable: ctx.Err() == nil}
	}
	for i := range blocks {
		b := &blocks[i]
		if b.skip {
			continue
		}
		switch b.Type {
		case BlockText, BlockThinking:
			b.Text = string(b.text)
			if len(b.cites) > 0 {
				b.Citations, _ = json.Marshal(b.cites)
			}
		case BlockServerToolUse:
			b.Input = emptyObject
			if len(b.text) > 0 && json.Valid(b.text) {
				b.Input = json.RawMessage(b.text)
			}
		case BlockToolUse:
			in, err := toolInput(b.text, b.Name)
			if err != nil {
				return nil, &StreamError{Err: fmt.Errorf("anthropic: %w", err), Started: started, Retryable: true}
			}
			b.Input = in
		}
		resp.Message.Content = append(resp.Message.Content, b.Block)
	}
	if resp.StopReason == "" {
		resp.StopReason = StopEndTurn
	}
	return resp, nil
}

// maxBlocks bounds the content blocks of one answer.
const maxBlocks = 4096

type anthropicBlock struct {
	Block
	text   []byte // text, thinking, or the tool input JSON as it arrives
	cites  []json.RawMessage
	skip   bool
	server bool // a server_tool_use block: its input is streamed, then it is shown
}

// maxSearches bounds the web searches of one request.
const maxSearches = 5

// searchResult reads a web_search_tool_result block: the URLs found, or the error; and its content as it came.
func searchResult(raw string) (ServerToolEvent, json.RawMessage) {
	var r struct {
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal([]byte(raw), &r)
	ev := ServerToolEvent{ID: r.ToolUseID, Name: "web_search", Done: true}
	if len(r.Content) == 0 {
		r.Content = json.RawMessage("[]")
	}
	var results []struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(r.Content, &results) == nil {
		for _, x := range results {
			if x.URL != "" {
				ev.URLs = append(ev.URLs, x.URL)
			}
		}
		return ev, r.Content
	}
	var e struct {
		ErrorCode string `json:"error_code"`
	}
	_ = json.Unmarshal(r.Content, &e)
	ev.Error = "the web search failed: " + cmp.Or(e.ErrorCode, "unknown error")
	return ev, r.Content
}

func anthropicStop(s anthropic.StopReason) StopReason {
	switch s {
	case anthropic.StopReasonToolUse:
		return StopToolUse
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return StopMaxTokens
	case anthropic.StopReasonRefusal:
		return StopRefusal
	case anthropic.StopReasonPauseTurn:
		return StopPause
	default: // end_turn, stop_sequence
		return StopEndTurn
	}
}

// anthropicError turns an SDK error into ErrAuth, ErrContextTooLong or a StreamError; every
// result is a *StreamError, so the loop has one type to look at.
func anthropicError(ctx context.Context, err error, started bool) error {
	if ctx.Err() != nil {
		return &StreamError{Err: ctx.Err(), Started: started}
	}
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		// No API answer: the connection failed or broke.
		return &StreamError{Err: fmt.Errorf("anthropic: %w", neterr.Wrap(err)), Started: started, Retryable: !neterr.Permanent(err)}
	}
	msg := providerMessage(apiErr.RawJSON())
	status := apiErr.StatusCode
	typ := string(apiErr.Type())
	if status == http.StatusOK {
		// An error event inside a 200 stream.
		retryable := typ == "overloaded_error" || typ == "api_error" || typ == "rate_limit_error" || typ == "timeout_error"
		switch {
		case typ == "authentication_error" || typ == "permission_error":
			return &StreamError{Err: fmt.Errorf("%w: anthropic said: %s", ErrAuth, msg), Started: started}
		case typ == "request_too_large" || contextTooLong(msg):
			return &StreamError{Err: fmt.Errorf("%w: anthropic said: %s", ErrContextTooLong, msg), Started: started}
		}
		return &StreamError{Err: fmt.Errorf("anthropic: error in the stream: %s (%s)", msg, typ), Started: started, Retryable: retryable}
	}
	var h http.Header
	if apiErr.Response != nil {
		h = apiErr.Response.Header
	}
	return httpError("anthropic", status, h, msg, started, typ == "authentication_error" || typ == "permission_error",
		typ == "request_too_large", typ == "not_found_error")
}
