package testenv

import (
	"net"
	"testing"
)

// ClosingListener listens on a free port of 127.0.0.1 and closes every connection it accepts: a server that a test
// shows reachable or not, and nothing more. It stops when the test ends.
func ClosingListener(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}
