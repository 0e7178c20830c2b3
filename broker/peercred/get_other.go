//go:build !linux

package peercred

import (
	"errors"
	"net"
)

// Get refuses every peer: the broker authenticates clients by SO_PEERCRED, which this system lacks.
func Get(net.Conn) (Peer, error) {
	return Peer{}, errors.New("peer credentials: the broker needs Linux (SO_PEERCRED)")
}
