//go:build !linux

package sandbox

import (
	"fmt"
	"runtime"
)

// Network is a session's network namespace; there is none outside Linux.
type Network struct{}

// NewNetwork refuses: network namespaces are Linux's.
func NewNetwork() (*Network, error) {
	return nil, fmt.Errorf("session network: network namespaces need Linux, this is %s", runtime.GOOS)
}

// Close does nothing.
func (n *Network) Close() {}

// Alive is false: there is no holder.
func (n *Network) Alive() bool { return false }
