package execv1

import "google.golang.org/protobuf/proto"

// WarmUp builds, once per process, what protobuf builds at the first use of each message type (the file's
// descriptors, each type's encoder and decoder, by reflection): for the messages of a session's start, up to its
// first model request (Hello, Prepare, OpenSession, the first prompt's calls and their results, the first records).
// Each side calls it while it waits for the other (the broker before its first call reaches it, garuda run while
// the broker starts), so that its first calls do not pay for it: about 0.5 ms of each process's CPU otherwise,
// on the way to the first answer. Only speed depends on the list: a message left out is built at its first use.
func WarmUp() {
	for _, m := range []proto.Message{
		&HelloRequest{}, &HelloResponse{BrokerVersion: "w", Sandbox: []*Feature{{Name: "w"}}},
		&PrepareRequest{Model: "w", EnvKeys: []string{"w"}},
		&PrepareResponse{Outcome: &PrepareResponse_Ready{Ready: &ModelSettings{Name: "w"}}, Notices: []string{"w"},
			Models: []*ModelChoice{{Name: "w"}}},
		&OpenSessionRequest{Root: "/", McpServers: []*McpServer{{Name: "w"}}},
		&OpenSessionResponse{SessionId: "w", Commands: []*CommandInfo{{Name: "w"}}, Hooked: &HookedEvents{Events: []string{"w"}}},
		&CallRequest{Msg: &CallRequest_Start{Start: &Start{SessionId: "w", Op: &Start_McpStart{McpStart: &McpStart{}}}}},
		&CallRequest{Msg: &CallRequest_Start{Start: &Start{Op: &Start_LoadAgent{LoadAgent: &LoadAgent{}}}}},
		&CallRequest{Msg: &CallRequest_Start{Start: &Start{Op: &Start_WebSearchConsent{WebSearchConsent: &WebSearchConsent{}}}}},
		&CallRequest{Msg: &CallRequest_Start{Start: &Start{Op: &Start_HookEvent{HookEvent: &HookEvent{Event: "w"}}}}},
		&CallResponse{Msg: &CallResponse_Progress{Progress: &Progress{Line: "w"}}},
		&CallResponse{Msg: &CallResponse_Result{Result: &Result{Content: "w", Notices: []string{"w"}, Hook: &HookOutcome{Reason: "w"},
			McpTools: &McpToolsResponse{Tools: []*McpTool{{Name: "w"}}, Prompts: []*CommandInfo{{Name: "w"}}}}}},
		&RecordRequest{Kind: "w", Data: []byte("w")}, &RecordResponse{},
	} {
		b, _ := proto.Marshal(m)
		_ = proto.Unmarshal(b, m.ProtoReflect().New().Interface())
	}
}
