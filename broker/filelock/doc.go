// Package filelock holds the broker's advisory file locks and the open flag that refuses a symlink, so that the
// packages that append to shared files (audit log, undo index, session files) stay portable.
package filelock
