// Package brokerconn is the front end's side of the broker (garuda-exec): it starts the broker on a socketpair, or
// connects to a broker that runs as its own service, tells when it is gone, and runs the model's tool calls through
// it (Runner). It is the only package of the front end that starts a process.
package brokerconn
