// Package sessionlog writes and reads the session files, <id>.jsonl: one JSON line per prompt, model message, tool
// call and result, stop reason and mode change, from the session's first prompt, complete enough to replay it.
package sessionlog
