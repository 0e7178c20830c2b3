package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/garuda-dev/garuda/broker/netguard"
	"github.com/garuda-dev/garuda/internal/neterr"
)

// Decide decides a host (policy.NormHost's spelling) before anything of it is looked up or dialled: the reach it is
// allowed, or an error whose text is the refusal the client reads (with how to allow the host).
type Decide func(ctx context.Context, host string, port uint16) (netguard.Reach, error)

// Conn is one proxied connection, for the audit log.
type Conn struct {
	Method   string // CONNECT, or the HTTP method forwarded
	Host     string
	Port     uint16
	Address  netip.AddrPort // what was dialled (zero when refused before)
	Verdict  string         // allow, deny (the policy), refused (the guard or a bad request), failed (the dial)
	Reason   string
	Up, Down int64 // bytes from the command, bytes to it (after the proxy's own reply)
	Duration time.Duration
}

// Proxy serves the proxy protocol on a listener.
type Proxy struct {
	Dialer *netguard.Dialer
	Decide Decide
	Record func(Conn) // called once per connection, when it ends
	// MaxConns bounds the connections open at once (0: MaxConns); more are answered 503 at once: defends the
	// broker against a command that opens connections without end.
	MaxConns int

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// maxHead bounds a request's line and headers.
const maxHead = 64 << 10

// MaxConns is the default of Proxy.MaxConns.
const MaxConns = 256

// Serve accepts connections until ln is closed or ctx ends; then it closes every open connection and returns once
// all have ended.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		if !p.track(c, true) {
			reply(c, http.StatusServiceUnavailable, fmt.Sprintf("Garuda's proxy has %d connections open for this command already", p.max()))
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			defer c.Close()
			p.serveConn(ctx, c)
		}()
	}
	p.closeAll()
	p.wg.Wait()
}

func (p *Proxy) max() int {
	if p.MaxConns > 0 {
		return p.MaxConns
	}
	return MaxConns
}

// track adds or removes an open connection; it refuses one past MaxConns.
func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns = map[net.Conn]bool{}
	}
	if !add {
		delete(p.conns, c)
		return true
	}
	if len(p.conns) >= p.max() {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// counter counts bytes through a reader or writer.
type counter struct{ n atomic.Int64 }

type countWriter struct {
	w io.Writer
	c *counter
}

func (w countWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.c.n.Add(int64(n))
	return n, err
}

// serveConn handles one connection: one CONNECT, or one plain HTTP request (answered with Connection: close).
func (p *Proxy) serveConn(ctx context.Context, c net.Conn) {
	started := time.Now()
	var up, down counter
	rec := Conn{Verdict: "refused"}
	defer func() {
		rec.Up, rec.Down, rec.Duration = up.n.Load(), down.n.Load(), time.Since(started)
		if p.Record != nil {
			p.Record(rec)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // the request's head; a tunnel lifts it
	br := bufio.NewReaderSize(c, maxHead)
	head, err := peekHead(br)
	if err != nil {
		rec.Reason = err.Error()
		reply(c, http.StatusBadRequest, err.Error())
		return
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		rec.Reason = "malformed request: " + err.Error()
		reply(c, http.StatusBadRequest, rec.Reason)
		return
	}
	rec.Method = req.Method
	target, err := requestTarget(req, head)
	if err != nil {
		rec.Reason = err.Error()
		rec.Host = req.Host
		reply(c, http.StatusBadRequest, err.Error())
		return
	}
	rec.Host, rec.Port = target.Host, target.Port
	reach, err := p.Decide(ctx, target.Host, target.Port)
	if err != nil {
		rec.Verdict, rec.Reason = "deny", err.Error()
		reply(c, http.StatusForbidden, "Garuda's network policy refused "+target.Addr()+": "+err.Error())
		return
	}
	rec.Verdict = "allow"
	upstream, addr, err := p.Dialer.Dial(ctx, target.Host, target.Port, reach)
	rec.Address = addr
	if err != nil {
		status := http.StatusBadGateway
		rec.Verdict = "failed"
		if errors.Is(err, netguard.ErrRefused) {
			status, rec.Verdict = http.StatusForbidden, "refused"
		}
		rec.Reason = err.Error()
		reply(c, status, "Garuda's proxy could not reach "+target.Addr()+": "+neterr.Wrap(err).Error())
		return
	}
	defer upstream.Close()
	_ = c.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		// Whatever the client sent after its CONNECT (a TLS hello, pipelined) goes first.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			w, _ := upstream.Write(b)
			up.n.Add(int64(w))
			br.Discard(n)
		}
		tunnel(c, upstream, &up, &down)
		return
	}
	p.forward(c, upstream, req, target, &up, &down)
}

// tunnel copies both ways until both sides are done, conn to conn (so that the kernel may splice), counting what
// each copy moved.
func tunnel(c, upstream net.Conn, up, down *counter) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, n *counter) {
		moved, _ := io.Copy(dst, src)
		n.n.Add(moved)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(upstream, c, up)
	go pipe(c, upstream, down)
	<-done
	<-done
}

// forward sends a plain HTTP request to upstream in origin form, asking it to close the connection after its answer,
// and copies the answer back as it comes (conn to conn, so that the kernel may splice); then the connection ends.
func (p *Proxy) forward(c, upstream net.Conn, req *http.Request, t netguard.Target, up, down *counter) {
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL = t.URL
	out.Host = t.URL.Host
	out.Close = true
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	if err := out.Write(countWriter{upstream, up}); err != nil {
		reply(c, http.StatusBadGateway, "Garuda's proxy could not send the request to "+t.Addr()+": "+err.Error())
		return
	}
	n, _ := io.Copy(c, upstream)
	down.n.Add(n)
}

// peekHead waits for the request's line and headers without consuming them.
func peekHead(br *bufio.Reader) ([]byte, error) {
	for n := 1; ; {
		b, err := br.Peek(n)
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			return b[:i+4], nil
		}
		if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
			return b[:i+2], nil
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, fmt.Errorf("the request's headers are longer than %d bytes", maxHead)
			}
			return nil, fmt.Errorf("read the request: %w", err)
		}
		n = max(len(b)+1, br.Buffered())
	}
}

// requestTarget checks a proxy request and returns what it asks to reach: a CONNECT's host:port, or a plain
// request's absolute http URL. The URL decides; a Host header that names another host is refused (defends against
// a request decided for one host and routed by the server to another).
func requestTarget(req *http.Request, head []byte) (netguard.Target, error) {
	hosts := rawHostHeaders(head)
	if len(hosts) > 1 {
		return netguard.Target{}, errors.New("the request has more than one Host header")
	}
	var t netguard.Target
	var err error
	if req.Method == http.MethodConnect {
		h, p, splitErr := net.SplitHostPort(req.RequestURI)
		if splitErr != nil {
			return t, fmt.Errorf("CONNECT %q: want host:port", req.RequestURI)
		}
		t, err = netguard.ParseURL("https://" + netguard.JoinHostPort(strings.Trim(h, "[]"), 443))
		if err != nil {
			return t, err
		}
		port, perr := strconv.ParseUint(p, 10, 16)
		if perr != nil || port == 0 {
			return t, fmt.Errorf("CONNECT %q: the port is not a port number", req.RequestURI)
		}
		t.Port = uint16(port)
	} else {
		if !strings.HasPrefix(strings.ToLower(req.RequestURI), "http://") {
			return t, fmt.Errorf("%s %q: this is a proxy; send an absolute http:// URL, or CONNECT for https", req.Method, req.RequestURI)
		}
		if t, err = netguard.ParseURL(req.RequestURI); err != nil {
			return t, err
		}
	}
	if len(hosts) == 1 {
		h, err := hostOf(hosts[0], t.Port)
		if err != nil || h != t.Addr() {
			return netguard.Target{}, fmt.Errorf("the Host header %q names another host than the request's %s", hosts[0], t.Addr())
		}
	}
	return t, nil
}

// rawHostHeaders are the Host header values of a request head as sent (net/http folds them into Request.Host).
func rawHostHeaders(head []byte) []string {
	var out []string
	lines := strings.Split(string(head), "\n")
	for _, l := range lines[1:] {
		name, v, ok := strings.Cut(strings.TrimRight(l, "\r"), ":")
		if ok && textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name)) == "Host" {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// hostOf is a Host header's host:port in the guard's spelling, the port defaulting to the request's.
func hostOf(v string, port uint16) (string, error) {
	h, p, err := net.SplitHostPort(v)
	if err != nil {
		h, p = strings.Trim(v, "[]"), strconv.Itoa(int(port))
	}
	n, err := netguard.Host(h)
	if err != nil {
		return "", err
	}
	pn, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", err
	}
	return netguard.JoinHostPort(n, uint16(pn)), nil
}

// reply answers with a status and a plain-text body, and ends the connection.
func reply(c net.Conn, status int, body string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		status, http.StatusText(status), len(body)+1, body)
}
