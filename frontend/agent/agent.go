package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/garuda-dev/garuda/frontend/model"
)

// EventType names what an Event reports. The ACP layer maps each to a session/update.
type EventType string

const (
	EventTextDelta     EventType = "text_delta"
	EventThinkingDelta EventType = "thinking_delta"
	EventToolCall      EventType = "tool_call"     // Call is set; the call is about to run
	EventToolResult    EventType = "tool_result"   // Call and Result are set
	EventToolStarted   EventType = "tool_started"  // Call is set; the call runs (its question, if any, was answered)
	EventToolProgress  EventType = "tool_progress" // Call is set; Text is the tail of its output so far
	EventNotice        EventType = "notice"        // Text is a line for the user, starting with "Garuda:"
	EventCompaction    EventType = "compaction"    // Text is a line for the user, starting with "Garuda:"
	EventModelRetry    EventType = "model_retry"   // Text is a line for the user, starting with "Garuda:"
	EventStepEnd       EventType = "step_end"
)

// Event is one thing that happened during a turn.
type Event struct {
	Type   EventType
	Text   string
	Call   *ToolCall
	Result *ToolResult
}

// ToolCall is one tool use asked for by the model.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Status is how a tool call ended.
type Status string

const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusDenied    Status = "denied"
	StatusCancelled Status = "cancelled"
)

// Location is a place in a file that a tool call touched.
type Location struct {
	Path string
	Line int
}

// ToolResult is the outcome of one tool call. Content is the text the model receives; for a denied or failed call
// it is the reason.
type ToolResult struct {
	CallID    string
	Status    Status
	Content   string
	Locations []Location
}

// Tools runs tool calls; in Garuda it is the broker, reached over gRPC.
type Tools interface {
	// Specs returns the tools offered to the model.
	Specs() []model.ToolSpec
	// ReadOnly reports whether calls of the tool may run in parallel with each other within one step.
	ReadOnly(name string) bool
	// Run runs one call. It must return soon after ctx is cancelled; progress may be called from any goroutine
	// until Run returns: with "" once when the call goes ahead (its question, if any, answered), then with the tail
	// of its output so far.
	Run(ctx context.Context, call ToolCall, progress func(line string)) ToolResult
}

// Stop is why a turn ended.
type Stop string

const (
	StopDone          Stop = "done"
	StopMaxTokens     Stop = "max_tokens"
	StopRefusal       Stop = "refusal"
	StopMaxSteps      Stop = "max_steps"
	StopTokenBudget   Stop = "token_budget"
	StopRepeatedCalls Stop = "repeated_calls"
	StopCancelled     Stop = "cancelled"
)

// Limits bound one turn. A zero field takes its default.
type Limits struct {
	MaxSteps     int           // model requests per turn; default 50
	MaxTokens    int           // input plus output tokens per turn, summed over its requests; default 2,000,000
	RepeatWarn   int           // the same call this many times in the window: the model is warned; default 3
	RepeatStop   int           // ... this many times: the turn stops; default 5
	RepeatWindow int           // the window, in steps; default 10
	Retries      int           // retries of a transient model failure (the only retry layer); default 4
	RetryBase    time.Duration // first retry delay, doubled each time (with jitter, at most 30 s); default 1 s
}

// Defaults of Limits.
const (
	DefaultMaxSteps     = 50
	DefaultMaxTokens    = 2_000_000
	DefaultRepeatWarn   = 3
	DefaultRepeatStop   = 5
	DefaultRepeatWindow = 10
	DefaultRetries      = 4
	DefaultRetryBase    = time.Second
	// DefaultMaxOutputTokens is the output limit of a request when Session.MaxOutputTokens is zero.
	DefaultMaxOutputTokens = 8192

	// maxPauses bounds the continuations of a turn the provider paused (Anthropic's pause_turn).
	maxPauses = 5

	maxRetryDelay = 30 * time.Second
	// maxRetryAfter is the longest retry-after the loop waits out; a provider that asks for more ends the turn.
	maxRetryAfter = 2 * time.Minute
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSteps, DefaultMaxSteps)
	def(&l.MaxTokens, DefaultMaxTokens)
	def(&l.RepeatWarn, DefaultRepeatWarn)
	def(&l.RepeatStop, DefaultRepeatStop)
	def(&l.RepeatWindow, DefaultRepeatWindow)
	def(&l.Retries, DefaultRetries)
	if l.RetryBase <= 0 {
		l.RetryBase = DefaultRetryBase
	}
	return l
}

// Conversation is the model loop's state of one ACP session: the model, the tools and the history. RunTurn is not
// safe for concurrent use: one turn at a time.
type Conversation struct {
	Model  model.Client
	Tools  Tools
	System func() string // the system prompt, asked for before every request (the mode may change between turns)
	Limits Limits
	// ContextWindow is the model's context in tokens; zero turns off compaction by estimate.
	ContextWindow   int
	MaxOutputTokens int // per request; default DefaultMaxOutputTokens
	ThinkingBudget  int // passed in every request of a turn (not in summary requests); zero: no extended thinking
	// ReasoningEffort is passed in every request of a turn (not in summary requests); empty: the server's default.
	ReasoningEffort string
	// WebSearch offers the provider's server-side web search in every request of a turn (not in summary requests);
	// its calls and results are shown as tool calls, not kept in History.
	WebSearch bool
	// History is the conversation. Between turns every tool_use is followed by its tool_result.
	History []model.Message
	// Record, if set, receives what a session file keeps: ("message", model.Message) for every message added to
	// History, ("compaction", Compaction) when History was replaced by a compacted one, then ("stop", Stop) or
	// ("error", string) at the end of the turn.
	Record func(kind string, v any)
	// BeforeCompact, if set, is called before older turns are summarised (the PreCompact hooks), with "auto".
	BeforeCompact func(ctx context.Context, trigger string)
	// Settle is how long a cancelled turn waits for a running tool call to report before it ends the call itself:
	// against tools that never answer, which would hold the turn open. Longer than the tools' own wait for their
	// cancel (brokerconn.Settle); zero means defaultSettle.
	Settle time.Duration

	// The usage of the last response covers History[:usageMark]; the estimate adds only what came after.
	usage     model.Usage
	usageMark int

	callIDs map[string]int // tool call ids seen, each with the number of the call that last used it (calls)
	calls   int            // tool calls of the session so far
	nextID  int
}

// callIDMemory is how many of the latest tool calls a session remembers the ids of, to keep them unique: ids seen
// again are remembered again, so an id a provider reuses (a local server's call_0 in every answer) stays known,
// while the ids of a long session's early calls, which real providers make random, are forgotten rather than kept
// for the whole session (about 60 bytes a call).
const callIDMemory = 1024

// uniqueCallID returns id, or a new one when id is empty or this session used it within its last callIDMemory calls:
// defends against a provider reusing ids (local servers number the calls of each answer from 0; a broken or hostile
// endpoint may send one id twice), which would make the editor overwrite one call's entry and ask about the wrong
// call.
func (s *Conversation) uniqueCallID(id string) string {
	if s.callIDs == nil {
		s.callIDs = map[string]int{}
		for _, m := range s.History {
			for _, b := range m.Content {
				if b.Type == model.BlockToolUse {
					s.calls++
					s.callIDs[b.ToolUseID] = s.calls
				}
			}
		}
	}
	s.calls++
	_, used := s.callIDs[id]
	if id != "" {
		s.callIDs[id] = s.calls // a reused id stays known as long as it is reused
	}
	for id == "" || used {
		s.nextID++
		id = fmt.Sprintf("garuda_call_%d", s.nextID)
		_, used = s.callIDs[id]
	}
	s.callIDs[id] = s.calls
	if len(s.callIDs) > 2*callIDMemory {
		for k, n := range s.callIDs {
			if n <= s.calls-callIDMemory {
				delete(s.callIDs, k)
			}
		}
	}
	return id
}

// Compaction is what Record receives when older turns were summarised.
type Compaction struct {
	Summary          string
	MessagesBefore   int
	MessagesAfter    int
	TokensBefore     int // estimated
	TokensAfter      int // estimated
	DroppedToolBytes int // bytes of tool output left out of the summary request
}

// defaultSettle is Conversation.Settle when it is zero.
const defaultSettle = 5 * time.Second

// turnLoop is the model loop of one RunTurn: its limits, its events and the tokens it used.
type turnLoop struct {
	s       *Conversation
	lim     Limits
	mu      sync.Mutex // serialises emit: progress of parallel calls arrives on several goroutines
	emitFn  func(Event)
	tokens  int
	repeats *repeats
}

func (t *turnLoop) emit(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emitFn(e)
}

func (t *turnLoop) notice(format string, args ...any) {
	t.emit(Event{Type: EventNotice, Text: "Garuda: " + fmt.Sprintf(format, args...)})
}

func (s *Conversation) record(kind string, v any) {
	if s.Record != nil {
		s.Record(kind, v)
	}
}

func (s *Conversation) appendMessage(m model.Message) {
	s.History = append(s.History, m)
	s.record("message", m)
}

// RunTurn runs one prompt of the user to its end. emit receives the events, from one goroutine at a time. A cancelled
// ctx ends the turn with StopCancelled and a nil error; any other failure (the model refused the key, a stream error
// that cannot be retried, retries used up) is returned as an error, wrapping *model.StreamError, model.ErrAuth or
// model.ErrContextTooLong where one is the cause. Whatever the outcome, History stays valid for the next turn.
func (s *Conversation) RunTurn(ctx context.Context, prompt string, emit func(Event)) (Stop, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	if strings.TrimSpace(prompt) == "" {
		return "", errors.New("run turn: the prompt is empty")
	}
	t := &turnLoop{s: s, lim: s.Limits.withDefaults(), emitFn: emit}
	t.repeats = newRepeats(t.lim)
	stop, err := t.run(ctx, prompt)
	if err != nil {
		s.record("error", err.Error())
	} else {
		s.record("stop", stop)
	}
	return stop, err
}

func (t *turnLoop) run(ctx context.Context, prompt string) (Stop, error) {
	s := t.s
	s.appendMessage(model.Message{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: prompt}}})
	pauses := 0
	for step := 1; ; step++ {
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
		if step > t.lim.MaxSteps {
			t.notice("the turn stopped after %d model steps, the limit per turn. Send a message to go on.", t.lim.MaxSteps)
			return StopMaxSteps, nil
		}
		if t.tokens >= t.lim.MaxTokens {
			t.notice("the turn stopped after using %d tokens, the limit per turn is %d. Send a message to go on.", t.tokens, t.lim.MaxTokens)
			return StopTokenBudget, nil
		}
		resp, err := t.modelStep(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return StopCancelled, nil
			}
			return "", err // the provider's words: the step number means nothing to the user
		}
		t.tokens += resp.Usage.Total()
		msg := resp.Message
		msg.Role = model.RoleAssistant
		for i, b := range msg.Content {
			if b.Type != model.BlockToolUse {
				continue
			}
			if len(b.Input) == 0 {
				msg.Content[i].Input = json.RawMessage("{}") // providers require an object
			}
			msg.Content[i].ToolUseID = s.uniqueCallID(b.ToolUseID)
		}
		calls := toolCalls(msg)
		if len(msg.Content) > 0 {
			s.appendMessage(msg)
			s.usage, s.usageMark = resp.Usage, len(s.History)
		}
		switch resp.StopReason {
		case model.StopMaxTokens, model.StopRefusal:
			// A cut-off or refused answer is not acted on; its calls get results so History stays valid.
			reason := "Not run: the answer reached the output token limit."
			stop := StopMaxTokens
			if resp.StopReason == model.StopRefusal {
				reason, stop = "Not run: the model refused.", StopRefusal
			}
			for i := range calls {
				t.emit(Event{Type: EventToolCall, Call: &calls[i]})
			}
			t.closeUnrun(calls, nil, StatusFailed, reason)
			t.emit(Event{Type: EventStepEnd})
			return stop, nil
		}
		if len(calls) == 0 && resp.StopReason == model.StopPause && len(msg.Content) > 0 {
			// The provider paused its own tools' loop (a long web search): the conversation, the paused answer
			// included, is sent again so that it goes on, at most maxPauses times a turn (each a step as well).
			t.emit(Event{Type: EventStepEnd})
			if pauses++; pauses > maxPauses {
				t.notice("the turn stopped: the model provider paused it %d times. Send a message to go on.", maxPauses)
				return StopMaxSteps, nil
			}
			continue
		}
		if len(calls) == 0 {
			t.emit(Event{Type: EventStepEnd})
			return StopDone, nil
		}
		repeated := t.runTools(ctx, calls)
		t.emit(Event{Type: EventStepEnd})
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
		if repeated != "" {
			t.notice("the turn stopped: the model called %s with the same input %d times in its last %d steps.", repeated,
				t.lim.RepeatStop, t.lim.RepeatWindow)
			return StopRepeatedCalls, nil
		}
	}
}

// toolCalls lists the tool_use blocks of an assistant message, in order.
func toolCalls(m model.Message) []ToolCall {
	var calls []ToolCall
	for _, b := range m.Content {
		if b.Type != model.BlockToolUse {
			continue
		}
		calls = append(calls, ToolCall{ID: b.ToolUseID, Name: b.Name, Input: b.Input})
	}
	return calls
}

// modelStep sends the next request, compacting the history first when it would pass 85% of the context window,
// or after the provider said the context is too long.
func (t *turnLoop) modelStep(ctx context.Context) (*model.Response, error) {
	s := t.s
	compactions := 0
	if s.ContextWindow > 0 && s.estimate(s.buildRequest()) > s.ContextWindow*85/100 {
		done, err := t.compact(ctx)
		if err != nil {
			return nil, err
		}
		if done {
			compactions++
		}
	}
	h := deltaHandler{t}
	for {
		resp, err := t.stream(ctx, s.buildRequest(), h)
		if err != nil && errors.Is(err, model.ErrContextTooLong) && ctx.Err() == nil && compactions < 2 {
			done, cerr := t.compact(ctx)
			if cerr != nil {
				return nil, cerr
			}
			if done {
				compactions++
				continue
			}
		}
		return resp, err
	}
}

type deltaHandler struct{ t *turnLoop }

func (h deltaHandler) Delta(kind model.DeltaKind, text string) {
	typ := EventTextDelta
	if kind == model.DeltaThinking {
		typ = EventThinkingDelta
	}
	h.t.emit(Event{Type: typ, Text: text})
}

// ServerTool shows a tool the provider ran (web search) as a tool call and its result.
func (h deltaHandler) ServerTool(ev model.ServerToolEvent) {
	call := &ToolCall{ID: ev.ID, Name: ev.Name}
	if !ev.Done {
		call.Input, _ = json.Marshal(map[string]string{"query": ev.Query})
		h.t.emit(Event{Type: EventToolCall, Call: call})
		return
	}
	r := &ToolResult{Status: StatusCompleted, Content: strings.Join(ev.URLs, "\n")}
	if ev.Error != "" {
		r.Status, r.Content = StatusFailed, ev.Error
	} else if len(ev.URLs) == 0 {
		r.Content = "No results."
	}
	h.t.emit(Event{Type: EventToolResult, Call: call, Result: r})
}

type discardHandler struct{}

func (discardHandler) Delta(model.DeltaKind, string) {}

// stream sends one request, retrying a transient failure (a connection error, 408, 409, 429, 5xx, 529, a broken
// stream) with backoff that honours the provider's retry-after; each retry is a notice. This is the only retry
// layer (the SDKs' own are off). A final error (400, 401, 403, 404, 413, 422, a context too long) ends the turn
// after its one attempt.
func (t *turnLoop) stream(ctx context.Context, req model.Request, h model.Handler) (*model.Response, error) {
	attempts := t.lim.Retries + 1
	for attempt := 1; ; attempt++ {
		resp, err := t.s.Model.Stream(ctx, req, h)
		if err == nil && resp == nil {
			err = errors.New("the model client returned no response and no error")
		}
		if err == nil {
			return resp, nil
		}
		var se *model.StreamError
		// These are the same again, however often they are sent.
		final := errors.Is(err, model.ErrContextTooLong) || errors.Is(err, model.ErrAuth) || errors.Is(err, model.ErrNotFound)
		if ctx.Err() != nil || final || !errors.As(err, &se) || !se.Retryable {
			return nil, err
		}
		if attempt >= attempts {
			return nil, &RetriesError{Attempts: attempt, Err: err}
		}
		if se.RetryAfter > maxRetryAfter {
			return nil, &RetriesError{Attempts: attempt, Err: err, Wait: se.RetryAfter}
		}
		delay := t.retryDelay(attempt)
		if se.RetryAfter > 0 {
			delay = se.RetryAfter // the provider knows when it will take the request
		}
		what := "the model did not answer"
		if se.Started {
			what = "the model's answer broke off"
		}
		t.emit(Event{Type: EventModelRetry, Text: fmt.Sprintf("Garuda: %s (%v); trying again in %s (attempt %d of %d).",
			what, err, roundDelay(delay), attempt+1, attempts)})
		if !sleep(ctx, delay) {
			return nil, ctx.Err()
		}
	}
}

// RetriesError is a transient failure that lasted: every attempt failed, or the provider asked to wait longer
// than the loop waits (Wait).
type RetriesError struct {
	Attempts int
	Wait     time.Duration
	Err      error
}

func (e *RetriesError) Error() string {
	if e.Wait > 0 {
		return fmt.Sprintf("%v; the provider asks to wait %s before the next request", e.Err, roundDelay(e.Wait))
	}
	return fmt.Sprintf("%v (failed %d times)", e.Err, e.Attempts)
}

func (e *RetriesError) Unwrap() error { return e.Err }

// roundDelay shows a wait the way a user reads it: "250ms", "2s", "1m30s".
func roundDelay(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// retryDelay is RetryBase·2^(attempt-1), at most 30 s, with the upper half jittered.
func (t *turnLoop) retryDelay(attempt int) time.Duration {
	d := t.lim.RetryBase
	for i := 1; i < attempt && d < maxRetryDelay; i++ {
		d *= 2
	}
	d = min(d, maxRetryDelay)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// buildRequest makes the next model request from the session. Messages shares History's array, clipped so that
// nothing the client appends can reach it.
func (s *Conversation) buildRequest() model.Request {
	req := model.Request{Messages: slices.Clip(s.History), MaxTokens: s.MaxOutputTokens, ThinkingBudget: s.ThinkingBudget,
		ReasoningEffort: s.ReasoningEffort, WebSearch: s.WebSearch}
	if s.System != nil {
		req.System = s.System()
	}
	if s.Tools != nil {
		req.Tools = s.Tools.Specs()
	}
	if req.MaxTokens <= 0 {
		req.MaxTokens = DefaultMaxOutputTokens
	}
	return req
}

// estimate guesses the input tokens of req: the last response's usage for what it covered, one token per 4 bytes
// for the rest.
func (s *Conversation) estimate(req model.Request) int {
	if s.usageMark > 0 && s.usageMark <= len(req.Messages) {
		return s.usage.Total() + messagesBytes(req.Messages[s.usageMark:])/4
	}
	n := len(req.System) + messagesBytes(req.Messages)
	for _, ts := range req.Tools {
		n += len(ts.Name) + len(ts.Description) + len(ts.InputSchema)
	}
	return n / 4
}

func messagesBytes(ms []model.Message) int {
	n := 0
	for _, m := range ms {
		n += 8
		for _, b := range m.Content {
			n += 16 + len(b.Text) + len(b.Signature) + len(b.ToolUseID) + len(b.Name) + len(b.Input) + len(b.Data) +
				len(b.Result) + len(b.Citations)
		}
	}
	return n
}
