package brokerconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/garuda-dev/garuda/frontend/brokerconn/spawn"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// ExecName is the broker's executable name.
const ExecName = spawn.ExecName

// Broker is a connection to the broker.
type Broker struct {
	Client execv1.ExecServiceClient
	// Path is the broker executable that was started, or the socket that was reached.
	Path string

	conn *grpc.ClientConn
	own  bool        // this process starts (or started) the broker
	proc *os.Process // the garuda-exec it started; set before spawned closes, nil when it could not start

	once    sync.Once
	done    chan struct{}
	spawned chan struct{} // closed once garuda-exec has started, or failed to (at once for a broker reached by Addr)

	gateOnce sync.Once
	gate     chan struct{}
	reason   error
	waited   chan struct{}
}

// Done is closed when the broker is gone.
func (b *Broker) Done() <-chan struct{} { return b.done }

// Err says why the broker is gone.
func (b *Broker) Err() error {
	select {
	case <-b.done:
		return b.reason
	default:
		return nil
	}
}

// Why says why the broker is gone, or nil if it still answers. A call that failed because the broker died can
// return before the broker is seen gone: a broker that does not answer is given a moment to be, so that its own
// reason (its exit status) is what the user reads rather than the socket's.
func (b *Broker) Why(ctx context.Context) error {
	if err := b.Err(); err != nil {
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := b.Client.Hello(hctx, &execv1.HelloRequest{}); err != nil {
		if reason := b.settle(); reason != nil {
			return reason
		}
		return Words(err)
	}
	return nil
}

// settle waits a moment for a broker that stopped answering to be seen gone, and returns why it is, if it is.
func (b *Broker) settle() error {
	select {
	case <-b.done:
	case <-time.After(time.Second):
	}
	return b.Err()
}

func (b *Broker) gone(err error) {
	b.once.Do(func() {
		b.reason = err
		close(b.done)
	})
}

// connGone reports a broken socket; for a broker this process started, its exit, which closes the socket, is the
// better reason (its status, and what it printed before), so that one is awaited a moment first.
func (b *Broker) connGone(err error) {
	if b.own {
		select {
		case <-b.waited:
		case <-time.After(time.Second):
		}
	}
	b.gone(err)
}

// Options say which broker to use.
type Options struct {
	// Addr is "unix://PATH" of a broker that runs as its own service; empty starts garuda-exec.
	Addr string
	// Exec overrides where garuda-exec is found.
	Exec string
	// OwnGroup starts garuda-exec in a process group of its own: a terminal's Ctrl-C, which signals the whole
	// foreground group, then reaches only the front end, which cancels the turn (garuda run).
	OwnGroup bool
}

// Find returns garuda-exec beside the running executable, else on PATH.
func Find() (string, error) {
	if p, ok := spawn.Beside(); ok {
		return p, nil
	}
	p, err := exec.LookPath(ExecName)
	if err != nil {
		return "", fmt.Errorf("%s was not found beside garuda nor on PATH; install Garuda's three binaries together "+
			"(make install, or the whole release archive)", ExecName)
	}
	return p, nil
}

// Connect starts or reaches the broker and checks that it answers.
func Connect(ctx context.Context, o Options) (*Broker, error) {
	b, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	b.Open()
	if err := b.Ready(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Start starts or reaches the broker without waiting for it: every call but Hello waits until Open, so that the
// front end can answer the editor at once and confine itself before it asks the broker for anything.
func Start(ctx context.Context, o Options) (*Broker, error) {
	b := &Broker{done: make(chan struct{}), waited: make(chan struct{}), gate: make(chan struct{}), spawned: make(chan struct{})}
	var conn net.Conn
	if o.Addr != "" {
		path, ok := strings.CutPrefix(o.Addr, "unix://")
		if !ok || path == "" {
			return nil, fmt.Errorf("--broker %q: give unix://PATH", o.Addr)
		}
		c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "unix", path)
		if err != nil {
			return nil, fmt.Errorf("--broker %s: cannot reach the broker (%v); is `garuda-exec serve --listen %s` running, "+
				"and may this user use it?", o.Addr, unwrapSyscall(err), path)
		}
		conn, b.Path = c, path
		close(b.waited)
		close(b.spawned)
	} else {
		c, err := b.start(o)
		if err != nil {
			return nil, err
		}
		conn = c
	}
	var used bool
	cc, err := grpc.NewClient("passthrough:///garuda-exec",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithIdleTimeout(0),
		grpc.WithUnaryInterceptor(b.unaryGate),
		grpc.WithStreamInterceptor(b.streamGate),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) {
			// There is one socket: a broker that broke it is gone, and is not dialled again.
			if used {
				return nil, errors.New("the broker's connection is closed")
			}
			used = true
			return &watchConn{Conn: conn, gone: b.connGone}, nil
		}))
	if err != nil {
		conn.Close()
		b.Close()
		return nil, fmt.Errorf("connect to the broker: %w", err)
	}
	b.conn = cc
	b.Client = execv1.NewExecServiceClient(cc)
	return b, nil
}

// Spawned is closed once the broker's process has started (its exec done: the front end may confine itself), or
// failed to start; at once for a broker reached by its address.
func (b *Broker) Spawned() <-chan struct{} { return b.spawned }

// Open lets calls through.
func (b *Broker) Open() { b.gateOnce.Do(func() { close(b.gate) }) }

// helloMethod is the one call that does not wait for Open.
const helloMethod = "/garuda.exec.v1.ExecService/Hello"

func (b *Broker) wait(ctx context.Context, method string) error {
	if method == helloMethod {
		return nil
	}
	select {
	case <-b.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Broker) unaryGate(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if err := b.wait(ctx, method); err != nil {
		return err
	}
	return inv(ctx, method, req, reply, cc, opts...)
}

func (b *Broker) streamGate(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	st grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if err := b.wait(ctx, method); err != nil {
		return nil, err
	}
	return st(ctx, desc, cc, method, opts...)
}

// Ready checks that the broker answers.
func (b *Broker) Ready(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := b.Client.Hello(hctx, &execv1.HelloRequest{}); err != nil {
		reason := b.settle()
		b.Close()
		if reason != nil {
			return fmt.Errorf("the broker %s did not answer: %v", b.Path, reason)
		}
		return fmt.Errorf("the broker %s did not answer (%v); if it runs as a service, check that it serves this user's uid "+
			"(--allow-uid)", b.Path, Words(err))
	}
	return nil
}

func unwrapSyscall(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// Close closes the connection; a broker this process started then ends every command and exits.
func (b *Broker) Close() error {
	if b.conn != nil {
		b.conn.Close()
	}
	if b.own {
		<-b.spawned
		select {
		case <-b.waited:
		case <-time.After(2 * time.Second):
			b.proc.Kill()
			<-b.waited
		}
	}
	return nil
}

// watchConn reports the broker gone when its socket reads EOF or fails.
type watchConn struct {
	net.Conn
	gone func(error)
}

func (c *watchConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		c.gone(fmt.Errorf("the broker closed its connection: %v", err))
	}
	return n, err
}
