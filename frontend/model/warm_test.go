package model

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Warm's canned streams are complete answers to both clients, so that the first real request finds the SDK warm;
// a stream the client would not read (the control: one cut before its end) is an error, not a silent no-op, and
// so is a provider type with no canned answer.
func TestWarm(t *testing.T) {
	tool := ToolSpec{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`)}
	for _, typ := range []string{TypeAnthropic, TypeOpenAI} {
		if err := Warm(context.Background(), typ, tool); err != nil {
			t.Fatalf("Warm %s: %v", typ, err)
		}
	}
	if err := Warm(context.Background(), "gemini", tool); err == nil {
		t.Error("Warm of an unknown provider type said nothing")
	}
	cut := canned(warmAnthropic[:strings.Index(warmAnthropic, "event: message_delta")])
	c := NewAnthropic(ProviderConfig{Type: TypeAnthropic, BaseURL: "http://warm.invalid", Model: "warm", APIKey: "warm",
		HTTPClient: &http.Client{Transport: cut}})
	if _, err := c.Stream(context.Background(), Request{MaxTokens: 16, Messages: []Message{{Role: RoleUser,
		Content: []Block{{Type: BlockText, Text: "x"}}}}}, discard{}); err == nil {
		t.Error("a stream cut before its end was read as an answer")
	}
}
