// Package netguard is the broker's one way out to the network, for web_fetch and for the commands' proxy alike: it
// parses hosts and URLs with net/netip only, resolves a host, checks every address it resolved to, and dials exactly
// an address it checked.
package netguard
