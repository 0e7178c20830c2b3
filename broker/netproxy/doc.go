// Package netproxy is the HTTP(S) proxy through which sandboxed commands reach the hosts the network policy allows:
// CONNECT tunnels (TLS passes through, never intercepted) and plain HTTP forwarded, every new host decided, every
// address checked and dialled by the network guard, every connection recorded.
package netproxy
