package testenv

import (
	"net"
	"testing"
)

// ClosingListener listens on a free port of 127.0.0.1 and closes every connection it accepts: a server that a test
// shows reachable or not, and nothing more. It stops when the test ends.
func ClosingListener(tb testing.TB) net.Listener {
	tb.Helper()
	return Serve(tb, "tcp", "127.0.0.1:0", func(c net.Conn) { c.Close() })
}

// Serve listens on network and address and hands every connection it accepts to serve, each in a goroutine of its
// own (serve closes it). It stops when the test ends.
func Serve(tb testing.TB, network, address string, serve func(net.Conn)) net.Listener {
	tb.Helper()
	ln, err := net.Listen(network, address)
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
			go serve(c)
		}
	}()
	return ln
}

// RefusedAddress is a host:port of 127.0.0.1 where nothing listens (a port just given up), for a test of how a
// refused connection is told.
func RefusedAddress(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Answering is a server on 127.0.0.1 that reads the first bytes a connection sends and answers every connection
// with reply, then closes it: a peer that speaks as a test needs (not HTTP, cut short, …). It returns its host:port.
func Answering(tb testing.TB, reply string) string {
	tb.Helper()
	return Serve(tb, "tcp", "127.0.0.1:0", func(c net.Conn) {
		defer c.Close()
		c.Read(make([]byte, 4096))
		c.Write([]byte(reply))
	}).Addr().String()
}
