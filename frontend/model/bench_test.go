package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// bodyTransport answers every request with a fixed event stream, without a socket, so that the
// benchmark measures decoding and dispatch, not the loopback.
type bodyTransport struct{ body []byte }

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(b.body)),
		Request:    r,
	}, nil
}

type countDeltas int

func (c *countDeltas) Delta(DeltaKind, string) { *c++ }

// BenchmarkAnthropicChunk is the time from one SSE text_delta chunk to Handler.Delta: one op is
// one chunk (the stream's other events are amortised over b.N chunks).
func BenchmarkAnthropicChunk(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\"," +
		"\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null," +
		"\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	buf.WriteString("event: content_block_start\ndata: " +
		"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(&buf, "event: content_block_delta\ndata: "+
			"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token %d of the answer \"}}\n\n", i)
	}
	buf.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	buf.WriteString("event: message_delta\ndata: " +
		"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":99}}\n\n")
	buf.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	c := NewAnthropic(ProviderConfig{Type: TypeAnthropic, BaseURL: "http://fake.invalid", APIKey: "k", Model: "m",
		HTTPClient: &http.Client{Transport: bodyTransport{buf.Bytes()}}})
	var n countDeltas
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := c.Stream(context.Background(), userHi, &n); err != nil {
		b.Fatal(err)
	}
	if int(n) != b.N {
		b.Fatalf("%d deltas for %d chunks", n, b.N)
	}
}

// BenchmarkBuildAnthropicRequest builds and encodes the request body of a 200-message history.
func BenchmarkBuildAnthropicRequest(b *testing.B) {
	req := Request{System: "You are Garuda."}
	for i := 0; i < 100; i++ {
		req.Messages = append(req.Messages,
			Message{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: fmt.Sprint("t", i),
				Text: string(bytes.Repeat([]byte("line of output\n"), 50))}}},
			Message{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "ok"}, {Type: BlockToolUse,
				ToolUseID: fmt.Sprint("t", i+1), Name: "read_file", Input: []byte(`{"path":"a.go"}`)}}})
	}
	c := NewAnthropic(ProviderConfig{Model: "m"}).(*anthropicClient)
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.params(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}
