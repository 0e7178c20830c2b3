package broker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// maxSocketPath is the kernel's limit of a unix socket path (sun_path less its NUL).
const maxSocketPath = 107

// listenUnix prepares PATH for a broker that serves other processes: the folder 0750 and the socket 0660, owned by
// the broker's user and, when given, one group. It replaces a stale socket and never a live one.
func listenUnix(path, group string) (net.Listener, error) {
	if path == "" || path[0] == '@' {
		// Defends against abstract sockets, which any process in the network namespace can reach (CVE-2020-15257).
		return nil, fmt.Errorf("--listen %q: give a filesystem path (abstract sockets are never used)", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", path, err)
	}
	if len(abs) > maxSocketPath {
		return nil, fmt.Errorf("--listen %s: the path is %d bytes, over the kernel's limit of %d for a socket; choose a "+
			"shorter path", abs, len(abs), maxSocketPath)
	}
	gid := -1
	if group != "" {
		g, err := lookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("--socket-group %s: %w", group, err)
		}
		gid = g
	}
	dir := filepath.Dir(abs)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("--listen %s: create its folder: %w", abs, err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", abs, err)
	}
	switch {
	case fi.Mode().Perm()&0o002 != 0 && fi.Mode()&os.ModeSticky == 0:
		// A folder anyone may write without the sticky bit lets anyone replace the socket.
		return nil, fmt.Errorf("--listen %s: its folder %s is writable by everyone; use a folder of the broker's own (it "+
			"is created 0750)", abs, dir)
	case fi.Mode().Perm()&0o002 == 0 && ownedByMe(fi):
		// The broker's own folder: only its user and the socket group may enter. A shared folder such as /tmp is
		// left as it is; the socket's own mode and the peer check still apply.
		if gid >= 0 {
			if err := os.Chown(dir, -1, gid); err != nil {
				return nil, fmt.Errorf("--listen %s: give its folder to group %s: %w", abs, group, err)
			}
		}
		if err := os.Chmod(dir, 0o750); err != nil {
			return nil, fmt.Errorf("--listen %s: restrict its folder: %w", abs, err)
		}
	}
	if err := removeStale(abs); err != nil {
		return nil, err
	}
	old := umask(0o117)
	ln, err := net.Listen("unix", abs)
	umask(old)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", abs, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if gid >= 0 {
		if err := os.Chown(abs, -1, gid); err != nil {
			ln.Close()
			return nil, fmt.Errorf("--listen %s: give the socket to group %s: %w", abs, group, err)
		}
	}
	if err := os.Chmod(abs, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--listen %s: %w", abs, err)
	}
	return ln, nil
}

// removeStale removes a socket file nobody listens on; a live one is an error, and so is any other kind of file.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--listen %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("--listen %s: a file that is not a socket is in the way; remove it or choose another path", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("--listen %s: another broker is serving this socket; stop it first or choose another path", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("--listen %s: cannot tell whether the socket is live (%v); remove it by hand if no broker runs", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("--listen %s: remove the stale socket: %w", path, err)
	}
	return nil
}

func lookupGroup(name string) (int, error) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// oneConn is a listener that yields the one connection the broker was started with (a socketpair end) and tells
// when the peer has gone: the end of that connection is the end of the broker.
type oneConn struct {
	mu     sync.Mutex
	conn   net.Conn
	closed chan struct{}
	once   sync.Once
	gone   func()
}

func newOneConn(c net.Conn, gone func()) *oneConn {
	return &oneConn{conn: &eofConn{Conn: c, gone: gone}, closed: make(chan struct{}), gone: gone}
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return &net.UnixAddr{Name: "socketpair", Net: "unix"} }

// SyscallConn exposes the socket, for the peer-credentials check.
func (c *eofConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("not a socket")
	}
	return sc.SyscallConn()
}

// eofConn calls gone once when a read fails: EOF when the front end closed its end or died.
type eofConn struct {
	net.Conn
	gone func()
	once sync.Once
}

func (c *eofConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && (errors.Is(err, io.EOF) || !errors.Is(err, net.ErrClosed)) {
		c.once.Do(c.gone)
	}
	return n, err
}
