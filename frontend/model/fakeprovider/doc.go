// Package fakeprovider is a scripted model provider over real HTTP: it speaks the Anthropic
// Messages and OpenAI chat-completions streaming formats, so that tests and benchmarks in other
// packages exercise the real provider path end to end without the network.
package fakeprovider
