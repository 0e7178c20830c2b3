package model

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Warm streams one canned answer through the client of provider type typ, in memory (no connection is made), with
// one tool, so that what its SDK builds at its first use (the encoders and decoders of its request and event types,
// reflected once per process) is built before the first real request: about 1.5 ms of a first request otherwise.
// One tool builds what every tool needs (the encoders are built per type, and every tool is of one type); the whole
// table would only spend again the CPU the first request spends on it, on two cores both busy until the first answer
// (0.3–0.8 ms of garuda run's first byte). garuda run calls it, for the session's provider only (warming the other
// SDK too took about a millisecond of CPU from the first request's own work), while it waits for the first prompt's
// broker calls. It returns an error for an unknown type or a canned answer the client no longer reads.
func Warm(ctx context.Context, typ string, tool ToolSpec) error {
	body, ok := warmStreams[typ]
	if !ok {
		return fmt.Errorf("warm: no canned answer for provider type %q", typ)
	}
	client, err := New(ProviderConfig{Type: typ, BaseURL: "http://warm.invalid", Model: "warm", APIKey: "warm",
		HTTPClient: &http.Client{Transport: canned(body)}})
	if err != nil {
		return err
	}
	_, err = client.Stream(ctx, Request{System: "warm", Tools: []ToolSpec{tool}, MaxTokens: 16,
		Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "warm"}}}}}, discard{})
	return err
}

// warmStreams are Warm's canned answers, by provider type.
var warmStreams = map[string]string{TypeAnthropic: warmAnthropic, TypeOpenAI: warmOpenAI}

type discard struct{}

func (discard) Delta(DeltaKind, string) {}

// canned answers every request with body as a 200 event stream, without a connection.
type canned string

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(string(c))),
		Request: r}, nil
}

// The smallest complete streams of each format: one text delta, then the end.
const (
	warmAnthropic = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_warm","type":"message","role":"assistant","model":"warm","content":[],` +
		`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}` + "\n\n" +
		"event: content_block_stop\n" +
		`data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}` + "\n\n" +
		"event: message_stop\n" +
		`data: {"type":"message_stop"}` + "\n\n"
	warmOpenAI = `data: {"id":"warm","object":"chat.completion.chunk","created":0,"model":"warm","choices":[{"index":0,` +
		`"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"warm","object":"chat.completion.chunk","created":0,"model":"warm","choices":[{"index":0,"delta":{},` +
		`"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}` + "\n\n" +
		"data: [DONE]\n\n"
)
