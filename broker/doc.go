// Package broker is garuda-exec: the gRPC service that alone touches the project. It authenticates its peer, decides
// every request with the permission engine, asks the user through the front end, runs file operations and sandboxed
// commands, and keeps the audit log, undo snapshots and session files.
package broker
