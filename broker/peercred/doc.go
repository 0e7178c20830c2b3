// Package peercred authenticates the broker's clients by the kernel's word: the uid of the process at the other
// end of the unix socket (SO_PEERCRED), checked at the gRPC handshake and again on every call.
package peercred
