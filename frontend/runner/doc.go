// Package runner is `garuda run`: one prompt run as a session of the same ACP agent an editor drives (in process,
// over a pipe), its answer streamed to a terminal, or as JSON lines to CI, its questions asked on the terminal or
// answered by the --allow-* flags. A new face, not a new trust model: the broker decides every action as it does
// for an editor, and the flags only answer questions the policy asks.
package runner
