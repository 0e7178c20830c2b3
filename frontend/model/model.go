package model

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Role is who said a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType says what a content block holds.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockThinking   BlockType = "thinking"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
	// BlockRedactedThinking is thinking the provider encrypted (Anthropic); its Data must be sent back unchanged.
	BlockRedactedThinking BlockType = "redacted_thinking"
	// BlockServerToolUse is a tool the provider ran itself (Anthropic's web_search): ToolUseID, Name and Input. It
	// and its BlockWebSearchResult stay in the conversation, sent back as they came, as the provider requires.
	BlockServerToolUse BlockType = "server_tool_use"
	// BlockWebSearchResult is a web search's result: ToolUseID, and Result, the provider's content (its results
	// with their encrypted content, or its error) sent back unchanged.
	BlockWebSearchResult BlockType = "web_search_tool_result"
)

// Block is one part of a message.
type Block struct {
	Type      BlockType       `json:"type"`
	Text      string          `json:"text,omitempty"`      // text, thinking, tool_result content
	Signature string          `json:"signature,omitempty"` // thinking signature, kept across turns
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Name      string          `json:"name,omitempty"`  // tool_use
	Input     json.RawMessage `json:"input,omitempty"` // tool_use
	IsError   bool            `json:"is_error,omitempty"`
	Data      string          `json:"data,omitempty"` // redacted_thinking payload, sent back unchanged
	// Result is a web_search_tool_result's content, as the provider sent it.
	Result json.RawMessage `json:"result,omitempty"`
	// Citations are a text block's citations of search results (a JSON array), as the provider sent them.
	Citations json.RawMessage `json:"citations,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is one model request.
type Request struct {
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
	// ThinkingBudget, when above zero, asks for extended thinking with that many tokens
	// (Anthropic; ignored by OpenAI-compatible servers, which decide for themselves).
	ThinkingBudget int
	// ReasoningEffort, when set ("low", "medium", "high"), is sent as reasoning_effort (OpenAI-compatible servers;
	// ignored by Anthropic, which takes ThinkingBudget).
	ReasoningEffort string
	// WebSearch offers the provider's server-side web search (Anthropic's web_search tool); a provider without one
	// ignores it (no search engine is ever scraped).
	WebSearch bool
}

// ServerToolEvent is a tool the provider ran itself (web search): its call, then its result.
type ServerToolEvent struct {
	ID    string
	Name  string // web_search
	Query string
	Done  bool     // the result: URLs and titles, or Error
	URLs  []string // the results' URLs, in order
	Error string
}

// WebSearcher is a Client whose provider runs a web search itself (Request.WebSearch); a Client that is not one
// offers none.
type WebSearcher interface {
	SearchesWeb() bool
}

// ServerToolHandler is a Handler that also sees the provider's own tool calls as they happen.
type ServerToolHandler interface {
	ServerTool(ServerToolEvent)
}

// StopReason is why the model stopped.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
	// StopPause: the provider paused a long turn of its own tools (Anthropic's pause_turn); sending the
	// conversation again, the paused answer included, lets it go on.
	StopPause StopReason = "pause_turn"
)

// Usage counts tokens of one request. InputTokens is the whole prompt, cached parts included;
// CacheReadTokens and CacheWriteTokens say how much of it was read from or written to the
// provider's prompt cache.
type Usage struct {
	InputTokens      int
	OutputTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
}

// Total is the number of tokens the request occupied in the context window: the prompt and the answer.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Add returns the sum of two usages, for counting the tokens of a turn.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// DeltaKind says what a streamed delta carries.
type DeltaKind int

const (
	DeltaText DeltaKind = iota
	DeltaThinking
)

// Handler receives a stream as it arrives. Text and thinking come as deltas;
// tool calls only once complete.
type Handler interface {
	Delta(kind DeltaKind, text string)
}

// Response is the complete answer of one request.
type Response struct {
	Message    Message // the assistant message, complete (text, thinking with signatures, tool_use blocks)
	StopReason StopReason
	Usage      Usage
}

// Client streams one request to a model provider.
type Client interface {
	Stream(ctx context.Context, req Request, h Handler) (*Response, error)
}

var (
	// ErrAuth: the provider refused the key (401/403). The ACP layer turns it into "auth required".
	ErrAuth = errors.New("the model provider refused the API key")
	// ErrContextTooLong: the provider says the request is over the context window.
	ErrContextTooLong = errors.New("the request is longer than the model's context window")
	// ErrNotFound: the provider answered 404, which means an unknown model id (or a base URL with no API).
	ErrNotFound = errors.New("the model provider does not know this model")
)

// StreamError is a failure of the provider's stream. Started reports whether any
// output had been delivered to the Handler before the failure; Retryable whether
// the agent loop may try again (a transient failure), and RetryAfter how long the
// provider asked it to wait first (0: not said). Status is the HTTP status of an
// error answer, 0 for a connection failure or an error inside the stream.
type StreamError struct {
	Err        error
	Started    bool
	Retryable  bool
	RetryAfter time.Duration
	Status     int
}

func (e *StreamError) Error() string { return e.Err.Error() }
func (e *StreamError) Unwrap() error { return e.Err }
