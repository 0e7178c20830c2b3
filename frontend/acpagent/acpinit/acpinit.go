// Package acpinit is Garuda's answer to ACP's initialize, written as the spec gives it. `garuda acp` gives it from
// its package initialisation (see early.go): the answer depends on nothing but the request, and waiting for main
// would make the editor wait for the model SDKs, grpc and protobuf to initialise.
package acpinit

import (
	"bytes"

	acp "github.com/coder/acp-go-sdk"
)

// Answer is the answer to initialize: protocol 1, session load, list, resume and close, embedded context, the
// editor's MCP servers over HTTP and SSE, and Terminal Auth when the editor can run it.
func Answer(p acp.InitializeRequest, version string) acp.InitializeResponse {
	caps := p.ClientCapabilities
	terminal := caps.Auth.Terminal || caps.Meta["terminal-auth"] == true
	methods := []acp.AuthMethod{}
	if terminal {
		methods = append(methods, acp.AuthMethod{Terminal: &acp.AuthMethodTerminalInline{
			Type:        "terminal",
			Id:          "garuda-setup",
			Name:        "Set up Garuda",
			Description: acp.Ptr("Choose a model and enter its API key."),
			Args:        []string{"setup"},
		}})
	}
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersion(1),
		AgentInfo:       &acp.Implementation{Name: "garuda", Title: acp.Ptr("Garuda"), Version: version},
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{Image: false, Audio: false, EmbeddedContext: true},
			McpCapabilities:    acp.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: acp.SessionCapabilities{List: &acp.SessionListCapabilities{},
				Resume: &acp.SessionResumeCapabilities{}, Close: &acp.SessionCloseCapabilities{}},
		},
		AuthMethods: methods,
	}
}

// The SDK drops false capabilities (omitempty) and adds empty objects the spec does not list; the answer to
// initialize is written as the spec gives it. SDKCaps is what the SDK writes for Garuda's capabilities
// (TestInitializeLineIsTheSpecs keeps the two in step with the pinned SDK).
var (
	initMarker = []byte(`"agentInfo":{"name":"garuda"`)
	SDKCaps    = []byte(`"agentCapabilities":{"auth":{},"loadSession":true,"mcpCapabilities":{"http":true,"sse":true},` +
		`"promptCapabilities":{"embeddedContext":true},"sessionCapabilities":{"close":{},"list":{},"resume":{}}}`)
	specCaps = []byte(`"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":true},` +
		`"mcpCapabilities":{"http":true,"sse":true},"sessionCapabilities":{"list":{},"resume":{},"close":{}}}`)
)

// SpecLine is a message as the SDK wrote it, with the capabilities of an answer to initialize as the spec gives them.
func SpecLine(p []byte) []byte {
	if bytes.Contains(p, initMarker) {
		return bytes.Replace(p, SDKCaps, specCaps, 1)
	}
	return p
}
