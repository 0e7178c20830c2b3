// Package brokerconn starts the broker (garuda-exec) on a socketpair, or connects to a broker that runs as its own
// service, and tells when it is gone. It is the only package of the front end that starts a process.
package brokerconn
