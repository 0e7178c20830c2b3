// Package audit writes the broker's append-only, hash-chained audit log (one JSON line per event, one file per UTC
// day) and verifies it. The chain makes edits, insertions and removals inside a file evident; it is not a signature:
// whoever can write the folder can rewrite a whole file, so keep the folder writable by the broker's user only.
package audit
