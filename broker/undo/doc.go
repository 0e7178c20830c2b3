// Package undo keeps the pre-image of every file the broker writes, per session, and restores a session's last
// change on request, refusing when the file changed since Garuda wrote it.
package undo
