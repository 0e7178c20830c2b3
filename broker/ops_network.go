package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/netguard"
	"github.com/garuda-dev/garuda/broker/netproxy"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// sessionNet is a session's network namespace (sandbox.Network): its sandboxed commands, background processes,
// hooks and MCP stdio servers share its loopback, each in pid and mount namespaces of its own. It is made at the
// first of them and closed with the session (which ends everything in it). Where it cannot be made (the kernel
// refuses a network namespace), commands run as before, each in its own namespace or in the fallback without one;
// the failure is not retried. A holder killed from outside is replaced at the next command.
type sessionNet struct {
	mu      sync.Mutex
	n       *sandbox.Network
	err     error
	closed  bool
	warming *time.Timer // a warm-up that has not begun yet
}

// get returns the session's network, made now if needed; nil where there is none.
func (sn *sessionNet) get() *sandbox.Network {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.closed || sn.err != nil {
		return nil
	}
	if sn.n != nil && sn.n.Alive() {
		return sn.n
	}
	if sn.n != nil {
		sn.n.Close()
	}
	sn.n, sn.err = sandbox.NewNetwork()
	return sn.n
}

// warmDelay is how long after a prompt begins its session's network is made ahead of its first command.
//
// Not at once: the holder's start (a clone into new user and network namespaces, then a third start of this
// binary's runtime and packages, about 5 ms of CPU) took a core from the prompt's first model request and its
// answer, which the user waits for (0.3-0.9 ms of garuda run's first byte). The first command comes once the model
// has streamed a tool call, later than this with any provider; one that comes sooner makes the network itself.
const warmDelay = 25 * time.Millisecond

// warm makes the session's network ahead of its first command, in the background, so that the first command does
// not wait for the holder's start: at each prompt (mcp_start), warmDelay after it, where it costs nothing once the
// network is there.
func (sn *sessionNet) warm() {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.closed || sn.warming != nil {
		return
	}
	sn.warming = time.AfterFunc(warmDelay, func() {
		sn.mu.Lock()
		sn.warming = nil
		sn.mu.Unlock()
		sn.get()
	})
}

// close ends the session's network and everything still running in it.
func (sn *sessionNet) close() {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.closed = true
	if sn.warming != nil {
		sn.warming.Stop()
		sn.warming = nil
	}
	if sn.n != nil {
		sn.n.Close()
		sn.n = nil
	}
}

// commandProxy is the proxy of one running command: a unix socket in the session's folder (not writable by its
// commands), which the sandbox's pid 1 forwards the command's 127.0.0.1:<port> to.
type commandProxy struct {
	socket string
	stop   func()
}

// startProxy serves the network policy to one command of call c. decide says how each new host is decided (see
// commandNetwork).
func (s *Service) startProxy(ctx context.Context, sess *session, decide netproxy.Decide) (*commandProxy, error) {
	dir, err := proxyFolder(sess)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, newID()[:8]+".sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("listen for the commands' proxy: %w", err)
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &netproxy.Proxy{Dialer: netDialer, Decide: decide, Record: func(conn netproxy.Conn) {
		d := map[string]string{"bytes_up": fmt.Sprint(conn.Up), "bytes_down": fmt.Sprint(conn.Down), "method": conn.Method}
		if conn.Address.IsValid() {
			d["address"] = conn.Address.String()
		}
		_ = s.record(audit.Record{Session: sess.id, Event: audit.EventConnection, Op: policy.OpNetwork,
			Input: netguard.JoinHostPort(conn.Host, conn.Port), Verdict: conn.Verdict, Reason: conn.Reason,
			DurationMS: conn.Duration.Milliseconds(), Detail: d}, false)
	}}
	done := make(chan struct{})
	go func() { p.Serve(pctx, ln); close(done) }()
	return &commandProxy{socket: sock, stop: func() {
		cancel()
		<-done
		os.Remove(sock)
	}}, nil
}

// proxyFolder is the session's folder for its commands' proxy sockets: in the user's private temp folder, or, where
// $TMPDIR is too long for a socket's path, in a private folder of /tmp. Its commands cannot write either.
func proxyFolder(sess *session) (string, error) {
	base := workBase()
	if len(filepath.Join(base, sess.id, "net", "01234567.sock")) > maxSocketPath {
		base = shortBase()
	}
	top, err := sess.folder(base)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(top, "net")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the proxy's folder: %w", err)
	}
	if len(dir)+len("/01234567.sock") > maxSocketPath {
		return "", fmt.Errorf("the proxy's folder %s is too long a path for a unix socket", dir)
	}
	return dir, nil
}

// commandNetwork decides the hosts a command connects to through the proxy: each new host once per command, by the
// network policy (audited); a question goes on the command's call while the command waits, one at a time, and ends
// with the command. "Allow for this session" adds a session rule; "Allow once" is for this command. With no call
// (nothing running that the user could answer through) a question is a deny that says how to allow the host.
func (s *Service) commandNetwork(c *call, op *operation, sess *session, command string) netproxy.Decide {
	var mu sync.Mutex    // the hosts decided for this command
	var askMu sync.Mutex // one decision (and question) at a time: a call has one open question
	allowed := map[string]netguard.Reach{}
	refused := map[string]error{}
	cached := func(host string) (netguard.Reach, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := allowed[host]; ok {
			return r, nil, true
		}
		err, ok := refused[host]
		return netguard.Reach{}, err, ok
	}
	return func(ctx context.Context, host string, port uint16) (netguard.Reach, error) {
		if r, err, ok := cached(host); ok {
			return r, err
		}
		askMu.Lock()
		defer askMu.Unlock()
		if r, err, ok := cached(host); ok { // decided while this connection waited
			return r, err
		}
		allow := func(r netguard.Reach) (netguard.Reach, error) {
			mu.Lock()
			allowed[host] = r
			mu.Unlock()
			return r, nil
		}
		req := policy.Request{Kind: policy.KindNetwork, Tool: policy.OpNetwork, Host: host}
		refuse := func(err error) (netguard.Reach, error) {
			mu.Lock()
			refused[host] = err
			mu.Unlock()
			return netguard.Reach{}, err
		}
		if c == nil {
			d, err := s.decideNoCall(sess, req)
			switch {
			case err != nil:
				return netguard.Reach{}, err
			case d.Verdict == policy.Allow:
				return allow(netguard.Reach{Private: d.OpensPrivate})
			case d.Verdict == policy.Ask:
				return refuse(fmt.Errorf("network access to %s needs your answer, and no prompt is running to ask it; %s",
					host, policy.NetworkHint(req, d)))
			}
			return refuse(fmt.Errorf("%s; %s", d.Reason, policy.NetworkHint(req, d)))
		}
		g, deniedRes, err := s.decideAs(c, op, policy.OpNetwork, req)
		switch {
		case err != nil:
			return netguard.Reach{}, err
		case deniedRes != nil:
			return refuse(errors.New(strings.TrimSuffix(strings.TrimPrefix(deniedRes.GetContent(), "Denied: "), ".")))
		}
		q := &execv1.Question{Title: "Allow network access to " + host + "?",
			Preview: fmt.Sprintf("The command\n$ %s\nconnects to %s through Garuda's proxy.", command, netguard.JoinHostPort(host, port))}
		type answer struct {
			res *execv1.Result
			err error
		}
		got := make(chan answer, 1)
		go func() { res, err := g.confirm(q); got <- answer{res, err} }()
		select {
		case a := <-got:
			if a.err != nil {
				return netguard.Reach{}, a.err
			}
			if a.res != nil {
				return refuse(fmt.Errorf("network access to %s was not allowed for this command (its question was answered no); %s",
					host, policy.NetworkHint(req, g.d)))
			}
		case <-ctx.Done():
			return netguard.Reach{}, fmt.Errorf("the command ended before the question about %s was answered", host)
		}
		return allow(netguard.Reach{Private: g.d.OpensPrivate})
	}
}

// decideNoCall decides and audits a request that no call carries (a process between prompts): a question cannot be
// asked, so an ask is recorded as the deny it becomes.
func (s *Service) decideNoCall(sess *session, req policy.Request) (policy.Decision, error) {
	d := policy.Decide(req, s.state(sess))
	verdict, reason := d.Verdict.String(), d.Reason
	if d.Verdict == policy.Ask {
		verdict, reason = "deny", "no prompt is running to ask: "+d.Reason
	}
	err := s.record(audit.Record{Session: sess.id, Event: audit.EventDecision, Op: req.Tool, Input: summary(req),
		Verdict: verdict, Rule: d.Rule, Reason: reason}, false)
	return d, err
}
