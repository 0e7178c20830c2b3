// Package mcphost is the broker's MCP client side: it starts a session's MCP servers (stdio programs through the
// command sandbox, HTTP and SSE servers by address), lists their tools for the model and calls them, with every
// message read bounded. Decisions are the broker's; this package only carries them out.
package mcphost
