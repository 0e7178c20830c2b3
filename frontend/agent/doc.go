// Package agent runs the model loop of one session: it streams model steps, hands tool calls to the broker through
// the Tools interface, keeps the history valid and within the context window, and writes the system prompt.
package agent
