package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"
)

// Resolver looks a host up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer resolves, checks and dials. The zero Dialer uses net.DefaultResolver and DialTimeout.
type Dialer struct {
	Resolver Resolver
	Timeout  time.Duration // of each connection attempt; 0: DialTimeout
}

// DialTimeout bounds one connection attempt.
const DialTimeout = 15 * time.Second

// Dial connects to host:port over TCP. host (a name or IP literal) is resolved once; every address it resolved to
// is checked against reach, and the dial fails when any is refused (defends against an answer that mixes a public
// address with a private one, to land on the private one after a failed attempt); then the checked addresses are
// dialled, each as an address, never as the name again (defends against DNS rebinding between check and dial). It
// returns the connection and the address it reached.
func (d *Dialer) Dial(ctx context.Context, host string, port uint16, reach Reach) (net.Conn, netip.AddrPort, error) {
	addrs, err := d.Resolve(ctx, host, reach)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DialTimeout
	}
	var errs []error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, port)
		nd := net.Dialer{Timeout: timeout, Control: func(network, address string, _ syscall.RawConn) error {
			// The kernel is handed exactly the checked address, nothing the dialer might have made of it.
			if got, err := netip.ParseAddrPort(address); err != nil || got.Addr().Unmap() != a || got.Port() != port {
				return fmt.Errorf("dial %s, not the checked %s: %w", address, ap, ErrRefused)
			}
			return nil
		}}
		c, err := nd.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.AddrPort{}, fmt.Errorf("connect to %s: %w", JoinHostPort(host, port), errors.Join(errs...))
}

// Resolve returns the addresses of host that reach lets be dialled: all of them, or an error naming the first that
// is refused. An IP literal is its own address.
func (d *Dialer) Resolve(ctx context.Context, host string, reach Reach) ([]netip.Addr, error) {
	h, err := Host(host)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(h); err == nil {
		addrs = []netip.Addr{a}
	} else {
		r := d.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if addrs, err = r.LookupNetIP(ctx, "ip", h); err != nil {
			return nil, fmt.Errorf("look up %s: %w", h, err)
		}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if err := reach.permits(h, a); err != nil {
			return nil, err
		}
		if a = a.Unmap(); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("look up %s: no address", h)
	}
	return out, nil
}
