package sandbox

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Forward listens on 127.0.0.1 of the calling process's network namespace, on a port the kernel picks, and relays
// each TCP connection to the unix socket at socket (the broker's proxy): proxy variables need a TCP address, and
// the namespace has no other way out. It runs in the sandbox's pid 1; with shared (the session's network
// namespace), it relays only connections made by a process of its pid namespace (ownPeer): another command of the
// session (a background process) cannot send its requests, and its questions, through this command's proxy. It
// returns the address and a stop that closes the listener and every relayed connection.
func Forward(socket string, shared bool) (addr string, stop func(), err error) {
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
			go func() {
				if shared && !ownPeer(c) {
					c.Close()
					return
				}
				relay(c, socket, track)
			}()
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

// ownPeer reports whether the other end of a loopback TCP connection is a socket held by a process of the calling
// process's pid namespace: the kernel's table of the network namespace's TCP sockets names the peer's socket, and
// /proc (mounted for this pid namespace) shows which processes hold it. Defends a command's proxy against the
// session's other commands, which share the network namespace but not the pid namespace.
func ownPeer(c net.Conn) bool {
	peer, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return false
	}
	inode := tcpSocketInode(peer, local)
	if inode == "" {
		return false
	}
	want := "socket:[" + inode + "]"
	proc, err := os.Open("/proc")
	if err != nil {
		return false
	}
	defer proc.Close()
	pids, _ := proc.Readdirnames(-1)
	var buf [64]byte
	for i := len(pids) - 1; i >= 0; i-- { // the newest processes first: the one connecting is likely among them
		pid := pids[i]
		if pid == "" || pid[0] < '0' || pid[0] > '9' || pid == "1" {
			continue
		}
		fd, err := os.Open("/proc/" + pid + "/fd")
		if err != nil {
			continue
		}
		names, _ := fd.Readdirnames(-1)
		for _, name := range names {
			n, err := unix.Readlinkat(int(fd.Fd()), name, buf[:])
			if err == nil && string(buf[:n]) == want {
				fd.Close()
				return true
			}
		}
		fd.Close()
	}
	return false
}

// tcpSocketInode finds, in /proc/net/tcp (the calling process's network namespace), the inode of the IPv4 socket
// bound to local with remote as its peer; "" when there is none.
func tcpSocketInode(local, remote *net.TCPAddr) string {
	hexAddr := func(a *net.TCPAddr) string {
		ip := a.IP.To4()
		if ip == nil {
			return ""
		}
		return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip), a.Port) // as the kernel prints it
	}
	l, r := hexAddr(local), hexAddr(remote)
	if l == "" || r == "" {
		return ""
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == l && fields[2] == r {
			return fields[9]
		}
	}
	return ""
}
