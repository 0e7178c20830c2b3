package model

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Warm's canned streams are complete answers to both clients, so that the first real request finds the SDKs warm;
// a stream the client would not read (the control: one cut before its end) is an error, not a silent no-op.
func TestWarm(t *testing.T) {
	tools := []ToolSpec{{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	if err := Warm(context.Background(), tools); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	cut := canned(warmAnthropic[:strings.Index(warmAnthropic, "event: message_delta")])
	c := NewAnthropic(ProviderConfig{Type: TypeAnthropic, BaseURL: "http://warm.invalid", Model: "warm", APIKey: "warm",
		HTTPClient: &http.Client{Transport: cut}})
	if _, err := c.Stream(context.Background(), Request{MaxTokens: 16, Messages: []Message{{Role: RoleUser,
		Content: []Block{{Type: BlockText, Text: "x"}}}}}, discard{}); err == nil {
		t.Error("a stream cut before its end was read as an answer")
	}
}
