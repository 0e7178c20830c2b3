// Package homefile writes and locks the broker's own files (audit log, undo index, session files, configuration):
// atomic replacement, advisory locks across processes, and opens that refuse a symlink.
package homefile
