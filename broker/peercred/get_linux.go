package peercred

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Get reads the kernel's credentials of the process at the other end of a unix socket.
func Get(conn net.Conn) (Peer, error) {
	uc, ok := conn.(syscall.Conn)
	if !ok || conn.LocalAddr().Network() != "unix" {
		return Peer{}, fmt.Errorf("peer credentials: %T is not a unix socket", conn)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if serr != nil {
		return Peer{}, fmt.Errorf("peer credentials: SO_PEERCRED: %w", serr)
	}
	return Peer{PID: uint32(cred.Pid), UID: cred.Uid, GID: cred.Gid}, nil
}
