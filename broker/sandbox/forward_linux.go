package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Forward listens on 127.0.0.1 of the calling process's network namespace, on a port the kernel picks, and relays
// each TCP connection to the unix socket at socket (the broker's proxy): proxy variables need a TCP address, and
// the namespace has no other way out. It is self-contained so that whatever holds a namespace (the sandbox's pid 1,
// a session's namespace holder) can run it. It returns the address and a stop that closes the listener and every
// relayed connection.
func Forward(socket string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for the proxy forwarder: %w", err)
	}
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closed := false
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if add && closed {
			return false
		}
		if add {
			conns[c] = true
		} else {
			delete(conns, c)
		}
		return true
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			go relay(c, socket, track)
		}
	}()
	stop = func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}
	return ln.Addr().String(), stop, nil
}

// relay copies between a TCP connection of the command and a new connection to the proxy's socket.
func relay(c net.Conn, socket string, track func(net.Conn, bool) bool) {
	defer c.Close()
	up, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	defer up.Close()
	if !track(c, true) || !track(up, true) {
		return
	}
	defer track(c, false)
	defer track(up, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}
