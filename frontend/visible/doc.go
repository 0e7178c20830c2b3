// Package visible makes text from the model or a file safe to show in an editor: control, invisible and
// bidirectional characters become visible escapes, so a command cannot look like another one.
package visible
