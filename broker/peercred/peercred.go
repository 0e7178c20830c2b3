package peercred

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// ErrNotAllowed is the refusal of a peer whose uid the broker does not serve.
var ErrNotAllowed = errors.New("peer uid is not allowed")

// Peer is who is at the other end of one connection.
type Peer struct {
	PID, UID, GID uint32
	// Conn numbers the connection, so that a session can be bound to the connection that opened it.
	Conn uint64
}

// AuthInfo carries the Peer through gRPC.
type AuthInfo struct {
	credentials.CommonAuthInfo
	Peer Peer
}

// AuthType implements credentials.AuthInfo.
func (AuthInfo) AuthType() string { return "peercred" }

// Policy says which peers are served.
type Policy struct {
	// UIDs are the uids served. Empty serves nobody.
	UIDs []uint32
	// OnRefuse is told of every refused peer (for the log and the audit log).
	OnRefuse func(p Peer, reason error)
	// OnClose is told when the connection of a served peer closes (from the goroutine that closes it).
	OnClose func(p Peer)
}

// Check reports whether p may use the broker.
func (pol *Policy) Check(p Peer) error {
	if slices.Contains(pol.UIDs, p.UID) {
		return nil
	}
	return fmt.Errorf("uid %d (pid %d): %w", p.UID, p.PID, ErrNotAllowed)
}

// Credentials returns gRPC transport credentials that refuse, at the handshake, any peer the policy does not serve.
// The channel is a local unix socket: it is not encrypted and needs no encryption.
func Credentials(pol *Policy) credentials.TransportCredentials { return &creds{pol: pol} }

type creds struct {
	pol   *Policy
	conns atomic.Uint64
}

var errClientSide = errors.New("peercred: client side is not authenticated by this package")

// ServerHandshake defends against any local user reaching the socket file: the kernel names the peer's uid.
func (c *creds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	p, err := Get(conn)
	if err == nil {
		p.Conn = c.conns.Add(1)
		err = c.pol.Check(p)
	}
	if err != nil {
		// The refused client only sees Unavailable, so the reason is told here.
		if c.pol.OnRefuse != nil {
			c.pol.OnRefuse(p, err)
		}
		return nil, nil, err
	}
	if c.pol.OnClose != nil {
		conn = &closeConn{Conn: conn, onClose: func() { c.pol.OnClose(p) }}
	}
	return conn, AuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}, Peer: p}, nil
}

// closeConn tells its first Close.
type closeConn struct {
	net.Conn
	once    sync.Once
	onClose func()
}

func (c *closeConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.onClose)
	return err
}

func (c *creds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errClientSide
}
func (c *creds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}
func (c *creds) Clone() credentials.TransportCredentials { return &creds{pol: c.pol} }
func (c *creds) OverrideServerName(string) error         { return nil }

// FromContext returns the peer of a call.
func FromContext(ctx context.Context) (Peer, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Peer{}, false
	}
	ai, ok := p.AuthInfo.(AuthInfo)
	return ai.Peer, ok
}

// check is the per-call authorisation: defends against a call that reached a handler without a checked peer.
func (pol *Policy) check(ctx context.Context) error {
	p, ok := FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "peer credentials missing")
	}
	if err := pol.Check(p); err != nil {
		if pol.OnRefuse != nil {
			pol.OnRefuse(p, err)
		}
		return status.Errorf(codes.PermissionDenied, "garuda-exec: %v", err)
	}
	return nil
}

// UnaryInterceptor checks the peer again on every unary call.
func (pol *Policy) UnaryInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := pol.check(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// StreamInterceptor checks the peer again on every stream.
func (pol *Policy) StreamInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := pol.check(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}
