package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/frontend/model"
)

// BenchmarkBuildRequest measures what the loop does before each model request of a long session: build the request
// from a 200-message history (system prompt, tools, messages) and estimate its tokens for the compaction check.
func BenchmarkBuildRequest(b *testing.B) {
	var h []model.Message
	for i := range 50 {
		h = append(h,
			textMsg(model.RoleUser, fmt.Sprintf("prompt %d: %s", i, strings.Repeat("word ", 80))),
			model.Message{Role: model.RoleAssistant, Content: []model.Block{
				{Type: model.BlockThinking, Text: strings.Repeat("think ", 100), Signature: strings.Repeat("s", 200)},
				{Type: model.BlockText, Text: strings.Repeat("answer ", 60)},
				use(fmt.Sprint("c", i), ToolReadFile, fmt.Sprintf(`{"path":"pkg/file%d.go"}`, i)),
			}},
			resultsMsg(fmt.Sprint("c", i), strings.Repeat("     1\tpackage main\n", 200)),
			textMsg(model.RoleAssistant, strings.Repeat("done ", 50)),
		)
	}
	info := PromptInfo{Root: "/home/dev/proj", Mode: ModeBuild, Date: "2026-12-02", Tools: specs, ToolRules: rules,
		Instructions: strings.Repeat("Rule.\n", 200), InstructionsFile: "AGENTS.md"}
	s := &Conversation{Tools: &fakeTools{}, System: func() string { return SystemPrompt(info) }, History: h, ContextWindow: 200_000}
	b.ReportAllocs()
	for b.Loop() {
		req := s.buildRequest()
		if s.estimate(req) <= 0 {
			b.Fatal("no estimate")
		}
	}
}
