// Package model talks to model providers (Anthropic Messages, OpenAI-compatible chat completions) behind one small
// streaming interface, and holds a scripted fake client for tests.
package model
