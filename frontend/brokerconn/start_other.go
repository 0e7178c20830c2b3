//go:build !linux

package brokerconn

import (
	"errors"
	"net"
)

// start refuses: the broker's sandbox and peer checks need Linux.
func (b *Broker) start(Options) (net.Conn, error) {
	return nil, errors.New("garuda runs its broker on Linux only; on Windows use WSL")
}
