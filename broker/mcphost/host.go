package mcphost

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garuda-dev/garuda/broker/config"
	"github.com/garuda-dev/garuda/internal/neterr"
)

// MaxMessage bounds one message from a server: the broker never holds more of one (a line of a stdio server, an
// event or a JSON body of an HTTP one). Defends against a server that floods the broker's memory.
const MaxMessage = 8 << 20

// InitTimeout is how long a server has to start and answer initialize and tools/list.
const InitTimeout = 30 * time.Second

// CallTimeout is how long a server has to answer a tool call (the longest a sandboxed command may run): a call never
// answered would otherwise hold the turn for ever where no one is there to cancel it (garuda run in CI).
const CallTimeout = 10 * time.Minute

// Limits on what a server may offer the model: more is left out with a notice (providers refuse long tool lists).
const (
	MaxToolsPerServer = 100
	MaxTools          = 200
	maxSchema         = 64 << 10
	maxDescription    = 4 << 10
)

// Launch runs a stdio server's program, in the command sandbox, with stdin and stdout as its standard input and
// output, until it exits or ctx ends (which ends its whole process tree). It returns once the program is gone; a
// program that could not be started at all (missing, not executable) is an error wrapping ErrNotStarted.
type Launch func(ctx context.Context, srv config.MCPServer, stdin io.Reader, stdout io.Writer) error

// ErrNotStarted is a stdio server's program that could not be started: its definition is wrong, not the server.
var ErrNotStarted = errors.New("its program could not be started")

// Options configure a Host.
type Options struct {
	Root        string // roots/list answers this folder only
	Launch      Launch // runs stdio servers; nil refuses them
	InitTimeout time.Duration
	CallTimeout time.Duration // 0: CallTimeout
	HTTP        *http.Client  // the base client of HTTP and SSE servers; nil: a clone of the default transport
	Log         *slog.Logger
	// SaveDir is where a text cut while it is read (over 1 MiB) is saved whole; "" cuts without saving.
	SaveDir string
}

// Tool is one tool of a running server, as the model is offered it.
type Tool struct {
	Name         string // mcp__<server>__<tool>, fit to ^[a-zA-Z0-9_-]{1,64}$ and unique in the host
	Server, Tool string // the server's key and its own name of the tool
	Description  string
	Schema       json.RawMessage
	ReadOnlyHint bool // the server's claim: it loosens no decision
}

// Host is a session's MCP client side: the servers it started, their tools, and the calls to them. Nothing of it
// is shared with another session.
type Host struct {
	opts Options
	ctx  context.Context // ends every server
	stop context.CancelFunc

	mu      sync.Mutex
	servers map[string]*server
	notices []string
	gen     uint64 // the generation of the tool list: it changes when a server starts, stops or changes its tools
	offered *offer // the tools offered for a generation (offerLocked)
	// stdioEpoch counts StopStdio calls: a stdio server that was starting during one does not join (it started
	// under the mode before).
	stdioEpoch uint64
	closed     bool
	wg         sync.WaitGroup
	// timedOut are the servers that did not answer within InitTimeout, by name, with their definition's hash: they
	// are not started again in this session (each prompt would wait the whole limit again) until it changes.
	timedOut map[string]string
}

// server is one started server.
type server struct {
	def      config.MCPServer
	cs       *mcp.ClientSession
	end      context.CancelFunc // ends its connection and its program
	done     chan struct{}      // closed when its program (stdio) or connection is gone
	ready    chan struct{}      // closed when it is registered, with cs and its first lists set
	tools    []*mcp.Tool
	prompts  []*mcp.Prompt
	restarts int
	stopping bool
	lastErr  error
	http     *headerTransport // an HTTP or SSE server's: what its last exchange was
}

// New makes a host for one session; Close ends everything it started.
func New(opts Options) *Host {
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = InitTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = CallTimeout
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Host{opts: opts, ctx: ctx, stop: stop, servers: map[string]*server{}, timedOut: map[string]string{}}
}

// Running reports whether the named server is running.
func (h *Host) Running(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.servers[name]
	return ok
}

// Names are the running servers' names, sorted.
func (h *Host) Names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for n := range h.servers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TimedOut reports whether the named server, with the definition of this hash, did not answer in time at an
// earlier start of the session: Start skips it.
func (h *Host) TimedOut(name, hash string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.timedOut[name] == hash
}

// RunningAs reports whether the named server is running with the definition of this hash.
func (h *Host) RunningAs(name, hash string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	srv, ok := h.servers[name]
	return ok && srv.def.Hash() == hash
}

// Start starts, in parallel, the servers of defs that are not running yet, each within InitTimeout, and returns a
// notice for each that failed (it is left out). A server whose definition changed since it started is restarted.
func (h *Host) Start(ctx context.Context, defs []config.MCPServer) []string {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		notices []string
	)
	for _, d := range defs {
		h.mu.Lock()
		old, running := h.servers[d.Name]
		closed := h.closed
		timedOut := h.timedOut[d.Name] == d.Hash()
		h.mu.Unlock()
		if closed {
			return []string{"the session is closing: no MCP server starts"}
		}
		if running && old.def.Hash() == d.Hash() || timedOut {
			continue
		}
		if running {
			h.Stop(d.Name)
		}
		wg.Go(func() {
			err := h.startOne(ctx, d, 0)
			var notice string
			switch {
			case err == nil:
				return
			case ctx.Err() != nil:
				notice = fmt.Sprintf("MCP server %q (%s) was not started: the turn was cancelled while it started; it starts "+
					"at the next prompt", d.Name, d.Where())
			case errors.Is(err, errInitTimeout):
				h.mu.Lock()
				h.timedOut[d.Name] = d.Hash()
				h.mu.Unlock()
				notice = fmt.Sprintf("MCP server %q (%s) did not start: %v; it is not started again in this session unless "+
					"its definition changes", d.Name, d.Where(), err)
			default:
				notice = fmt.Sprintf("MCP server %q (%s) did not start: %v", d.Name, d.Where(), err)
			}
			mu.Lock()
			notices = append(notices, notice)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(notices)
	return notices
}

// startOne starts one server and lists its tools; restarts counts the restarts before this start.
func (h *Host) startOne(ctx context.Context, d config.MCPServer, restarts int) error {
	sctx, end := context.WithCancel(h.ctx)
	srv := &server{def: d, end: end, done: make(chan struct{}), ready: make(chan struct{}), restarts: restarts}
	ictx, cancel := context.WithTimeout(ctx, h.opts.InitTimeout)
	defer cancel()
	stopInit := context.AfterFunc(ictx, func() {
		if !errors.Is(ictx.Err(), context.Canceled) || ctx.Err() != nil {
			end() // a server that does not answer in time is ended with its program
		}
	})
	defer stopInit()
	h.mu.Lock()
	epoch := h.stdioEpoch
	h.mu.Unlock()
	cs, err := h.connect(sctx, ictx, srv)
	if err == nil {
		srv.cs = cs
		// Tools and prompts are listed at once: two round trips in the time of one.
		var lists sync.WaitGroup
		lists.Go(func() { srv.prompts = listPrompts(ictx, cs) })
		srv.tools, err = listTools(ictx, cs)
		lists.Wait()
	}
	if err != nil {
		end()
		if cs != nil {
			cs.Close()
		}
		<-srv.done
		if ictx.Err() == context.DeadlineExceeded {
			return &initTimeout{h.opts.InitTimeout}
		}
		return explain(err, srv)
	}
	h.mu.Lock()
	if h.closed || d.Type == config.MCPStdio && h.stdioEpoch != epoch {
		why := "the session closed"
		if !h.closed {
			why = "the mode changed while it started; it starts again with the next prompt"
		}
		h.mu.Unlock()
		end()
		cs.Close()
		<-srv.done
		return errors.New(why)
	}
	h.servers[d.Name] = srv
	h.gen++
	close(srv.ready)
	h.mu.Unlock()
	h.wg.Go(func() { h.watch(srv) })
	return nil
}

// connect starts the server's program or opens its address and initializes the MCP session. srv.done is closed
// when the program has exited or the connection ended.
func (h *Host) connect(sctx, ictx context.Context, srv *server) (*mcp.ClientSession, error) {
	var t mcp.Transport
	d := srv.def
	switch d.Type {
	case config.MCPStdio:
		if h.opts.Launch == nil {
			close(srv.done)
			return nil, errors.New("stdio servers cannot run here")
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go func() {
			err := h.opts.Launch(sctx, d, inR, outW)
			h.mu.Lock()
			srv.lastErr = err
			h.mu.Unlock()
			// The program is gone: its pipes end, so that the client sees the end of the connection.
			inR.CloseWithError(io.ErrClosedPipe)
			outW.CloseWithError(errExited)
			close(srv.done)
		}()
		// The transport's reader is bounded: long texts are cut as they are read, and a line still over MaxMessage
		// ends the connection; it is never held whole.
		t = &mcp.IOTransport{Reader: newCutReader(outR, h.saver()), Writer: inW, MaxLineLength: MaxMessage}
	case config.MCPHTTP, config.MCPSSE:
		rt := &headerTransport{base: h.baseTransport(), headers: d.Headers, save: h.saver()}
		hc := &http.Client{Transport: rt, Timeout: 0, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				rt.failed(errRedirects)
				return errRedirects
			}
			return nil
		}}
		srv.lastErr, srv.http = nil, rt
		if d.Type == config.MCPHTTP {
			t = &mcp.StreamableClientTransport{Endpoint: d.URL, HTTPClient: hc, MaxEventSize: MaxMessage, MaxRetries: 1}
		} else {
			t = &mcp.SSEClientTransport{Endpoint: d.URL, HTTPClient: hc, MaxEventSize: MaxMessage}
		}
		defer func() {
			if rt.status() == http.StatusUnauthorized || rt.status() == http.StatusForbidden {
				h.mu.Lock()
				srv.lastErr = fmt.Errorf("%w (HTTP %d)", ErrUnauthorized, rt.status())
				if rt.status() == http.StatusForbidden {
					// Credentials or none: the server will not serve this client (not only a bad token).
					srv.lastErr = fmt.Errorf("%w (HTTP 403 Forbidden)", ErrForbidden)
				}
				h.mu.Unlock()
			}
		}()
		go func() {
			<-sctx.Done()
			close(srv.done)
		}()
	default:
		close(srv.done)
		return nil, fmt.Errorf("unknown transport %q", d.Type)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "garuda", Version: "1"}, &mcp.ClientOptions{
		// Only roots: no sampling, no elicitation (a server's requests for them are refused).
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go h.refresh(srv)
		},
	})
	c.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: h.opts.Root}).String(), Name: "project"})
	// The connection lives as long as sctx; initialize must answer within ictx.
	type res struct {
		cs  *mcp.ClientSession
		err error
	}
	ch := make(chan res, 1)
	go func() {
		cs, err := c.Connect(sctx, t, nil)
		ch <- res{cs, err}
	}()
	select {
	case r := <-ch:
		return r.cs, r.err
	case <-ictx.Done():
		srv.end()
		r := <-ch
		if r.cs != nil {
			r.cs.Close()
		}
		return nil, ictx.Err()
	}
}

// initTimeout is a server that did not answer initialize and its lists within the limit; it is errInitTimeout.
type initTimeout struct{ limit time.Duration }

func (e *initTimeout) Error() string        { return fmt.Sprintf("it did not answer within %s", e.limit) }
func (e *initTimeout) Is(target error) bool { return target == errInitTimeout }

var errInitTimeout = errors.New("the server did not answer in time")

// errExited ends the output of a program that exited.
var errExited = errors.New("the server's program exited")

// ErrUnauthorized is an HTTP or SSE server's 401; ErrForbidden its 403.
var (
	ErrUnauthorized = errors.New("the server refused the credentials (check the headers of its definition)")
	ErrForbidden    = errors.New("the server refused access (wrong address, or credentials without the right to it?)")
)

// explain turns a start's or a call's error into words that say what the server did.
func explain(err error, srv *server) error {
	if srv.lastErr != nil && (errors.Is(srv.lastErr, ErrUnauthorized) || errors.Is(srv.lastErr, ErrForbidden)) {
		return srv.lastErr
	}
	msg := err.Error()
	tooLarge := strings.Contains(msg, "exceeded the configured maximum") || strings.Contains(msg, "SSE event exceeded") ||
		errors.Is(err, errTooLarge)
	// The server's own JSON-RPC error says what it says; the SDK's "rejected by transport" (-32005) wraps the
	// transport's failure.
	var rpcErr *jsonrpc.Error
	answered := errors.As(err, &rpcErr) && rpcErr.Code != codeRejected
	if srv.http != nil && !tooLarge && !answered {
		// What the HTTP exchange itself says (unreachable, an error status, not an MCP answer), never the SDK's and
		// the transport's text around it, nor what the server sent.
		if why := srv.http.failure(srv.def.URL); why != nil {
			return why
		}
	}
	switch {
	case tooLarge:
		return fmt.Errorf("it sent a message over %d MiB, which Garuda does not read", MaxMessage>>20)
	case strings.Contains(msg, "invalid character"), strings.Contains(msg, "invalid trailing data"):
		return errors.New("it wrote something other than MCP messages on its standard output")
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, errExited):
		if errors.Is(srv.lastErr, ErrNotStarted) {
			return srv.lastErr
		}
		if srv.lastErr != nil {
			return fmt.Errorf("its program ended: %v", srv.lastErr)
		}
		return errors.New("it ended the connection")
	}
	return err
}

// listTools lists every tool of a server, keeping at most MaxToolsPerServer+1 (to know there were more).
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if len(out) > MaxToolsPerServer {
			break
		}
	}
	return out, nil
}

// refresh lists a server's tools again after it said they changed: the next Tools returns the new list. A change
// said while the server still starts is listed again once it is registered, so that neither list is lost.
func (h *Host) refresh(srv *server) {
	select {
	case <-srv.ready:
	case <-srv.done:
		return
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.opts.InitTimeout)
	defer cancel()
	tools, err := listTools(ctx, srv.cs)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.notices = append(h.notices, fmt.Sprintf("MCP server %q changed its tools, and listing them failed: %v", srv.def.Name,
			explain(err, srv)))
		return
	}
	srv.tools = tools
	h.gen++
}

// watch waits for a server's end: one that ended by itself is restarted once, with a notice; a second end leaves
// it stopped.
func (h *Host) watch(srv *server) {
	waitErr := make(chan struct{})
	go func() {
		srv.cs.Wait()
		close(waitErr)
	}()
	select {
	case <-waitErr:
	case <-srv.done:
	}
	srv.end()
	srv.cs.Close()
	<-srv.done
	h.mu.Lock()
	if h.servers[srv.def.Name] == srv {
		delete(h.servers, srv.def.Name)
		h.gen++
	}
	stopping := srv.stopping || h.closed
	h.mu.Unlock()
	if stopping {
		return
	}
	name := srv.def.Name
	if srv.restarts >= 1 {
		h.note(fmt.Sprintf("MCP server %q stopped again; it is not restarted in this session", name))
		return
	}
	if err := h.startOne(h.ctx, srv.def, srv.restarts+1); err != nil {
		h.note(fmt.Sprintf("MCP server %q stopped, and restarting it failed: %v", name, err))
		return
	}
	h.note(fmt.Sprintf("MCP server %q stopped; Garuda restarted it", name))
}

func (h *Host) note(n string) {
	h.mu.Lock()
	h.notices = append(h.notices, n)
	h.mu.Unlock()
}

// Stop ends one server (its program and its connection) and waits for it; it is not restarted.
func (h *Host) Stop(name string) {
	h.mu.Lock()
	srv := h.servers[name]
	if srv != nil {
		srv.stopping = true
		delete(h.servers, name)
		h.gen++
	}
	h.mu.Unlock()
	if srv != nil {
		srv.end()
		srv.cs.Close()
		<-srv.done
	}
}

// StopStdio ends every stdio server (a mode change: they start again under the new mode, at the next Start),
// with a notice that says why, and names them.
func (h *Host) StopStdio(why string) []string {
	h.mu.Lock()
	h.stdioEpoch++
	var names []string
	for n, s := range h.servers {
		if s.def.Type == config.MCPStdio {
			names = append(names, n)
		}
	}
	h.mu.Unlock()
	slices.Sort(names)
	for _, n := range names {
		h.Stop(n)
	}
	if len(names) > 0 {
		h.note(fmt.Sprintf("MCP servers %s were stopped: %s", strings.Join(names, ", "), why))
	}
	return names
}

// Close ends every server and waits until their programs are gone.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	var all []*server
	for _, s := range h.servers {
		s.stopping = true
		all = append(all, s)
	}
	h.servers = map[string]*server{}
	h.mu.Unlock()
	h.stop()
	for _, s := range all {
		s.cs.Close()
		<-s.done
	}
	h.wg.Wait()
}

// offer is what the model is offered for one generation of the list: the checked tools and, for each server,
// which of its own tool names they are. A call may name only these: a tool the list left out (an invalid schema,
// past a limit) is not called by its raw name either.
type offer struct {
	gen     uint64
	tools   []Tool
	named   map[string]map[string]bool   // server → its tools offered
	leftOut map[string]map[string]string // server → tool → why it is not offered
}

// offerLocked returns the offer of the list's generation, made when the list changed; the notices of what it left
// out are queued once, with it. h.mu is held.
func (h *Host) offerLocked() *offer {
	if h.offered != nil && h.offered.gen == h.gen {
		return h.offered
	}
	o := &offer{gen: h.gen, named: map[string]map[string]bool{}, leftOut: map[string]map[string]string{}}
	var names []string
	for n := range h.servers {
		names = append(names, n)
	}
	slices.Sort(names)
	taken := map[string]bool{}
	leave := func(server string, t *mcp.Tool, why string) {
		if t == nil {
			return
		}
		if o.leftOut[server] == nil {
			o.leftOut[server] = map[string]string{}
		}
		o.leftOut[server][t.Name] = why
	}
	full := false
	for _, server := range names {
		o.named[server] = map[string]bool{}
		tools := h.servers[server].tools
		if len(tools) > MaxToolsPerServer {
			h.notices = append(h.notices, fmt.Sprintf("MCP server %q offers more than %d tools; only the first %d are used",
				server, MaxToolsPerServer, MaxToolsPerServer))
		}
		for i, t := range tools {
			if i >= MaxToolsPerServer {
				leave(server, t, fmt.Sprintf("only the server's first %d tools are used", MaxToolsPerServer))
				continue
			}
			if len(o.tools) >= MaxTools {
				if !full {
					h.notices = append(h.notices, fmt.Sprintf("the MCP servers offer more than %d tools together; the rest are left out",
						MaxTools))
					full = true
				}
				leave(server, t, fmt.Sprintf("the MCP servers offer more than %d tools together", MaxTools))
				continue
			}
			tool, err := checkTool(server, t)
			if err != nil {
				h.notices = append(h.notices, fmt.Sprintf("MCP server %q: tool %q is left out: %v", server, printable(t.Name, 64), err))
				leave(server, t, err.Error())
				continue
			}
			tool.Name = uniqueName(modelName(server, t.Name), taken)
			o.tools = append(o.tools, tool)
			o.named[server][t.Name] = true
		}
	}
	h.offered = o
	return o
}

// Tools returns the tools of the running servers (checked, named for the model), the notices since the last call
// (failed schemas, restarts, changes), and the list's generation.
func (h *Host) Tools() ([]Tool, []string, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.offerLocked()
	notices := h.notices
	h.notices = nil
	return slices.Clone(o.tools), notices, o.gen
}

// has finds a running server and checks that tool (the server's own name) is one the model is offered.
func (h *Host) has(server, tool string) (*server, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	srv := h.servers[server]
	if srv == nil {
		return nil, fmt.Errorf("%s: %w", server, ErrNotRunning)
	}
	o := h.offerLocked()
	if o.named[server][tool] {
		return srv, nil
	}
	if why, ok := o.leftOut[server][tool]; ok {
		return nil, fmt.Errorf("MCP server %q: tool %q: %w (%s)", server, printable(tool, 64), ErrNotOffered, why)
	}
	return nil, fmt.Errorf("MCP server %q: tool %q: %w", server, printable(tool, 64), ErrNotOffered)
}

// Offered checks, without calling anything, that a call of tool on server may be made: the server runs and the
// tool is one the model is offered (ErrNotRunning or ErrNotOffered otherwise).
func (h *Host) Offered(server, tool string) error {
	_, err := h.has(server, tool)
	return err
}

// saver opens the file a text cut while it is read is saved to, or is nil without SaveDir.
func (h *Host) saver() func() (*os.File, error) {
	if h.opts.SaveDir == "" {
		return nil
	}
	return func() (*os.File, error) {
		if err := os.MkdirAll(h.opts.SaveDir, 0o700); err != nil {
			return nil, err
		}
		return os.CreateTemp(h.opts.SaveDir, time.Now().UTC().Format("20060102T150405")+"-mcp-*.txt")
	}
}

// headerTransport adds a server's configured headers (they stay in the broker) and bounds what a response body
// gives: long texts are cut as they are read, and a JSON body still over MaxMessage fails (an event stream is
// bounded per event by the SDK).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	save    func() (*os.File, error)

	mu      sync.Mutex
	last    int    // the status of the first response, then of any error response
	lastBad string // the content type of the last 2xx answer with a body, when neither JSON nor an event stream
	lastErr error  // the last exchange's transport error; nil once an exchange succeeds
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			t.failed(err)
		}
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	t.mu.Lock()
	// A GET answered 405 is a streamable server without an event stream of its own: not a failure.
	if t.last == 0 || resp.StatusCode >= 400 && !(req.Method == http.MethodGet && resp.StatusCode == http.StatusMethodNotAllowed) {
		t.last = resp.StatusCode
	}
	t.lastErr = nil
	switch {
	case resp.StatusCode/100 != 2 || resp.StatusCode == http.StatusAccepted || resp.ContentLength == 0:
	case mt == "application/json" || mt == "text/event-stream":
		t.lastBad = ""
	default:
		t.lastBad = cmp.Or(mt, "no content type")
	}
	t.mu.Unlock()
	resp.Body = newCutReader(resp.Body, t.save)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &limitedBody{r: resp.Body, left: MaxMessage}
	}
	return resp, nil
}

func (t *headerTransport) status() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// failed notes an exchange that failed before any answer.
func (t *headerTransport) failed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = err
}

// codeRejected is the SDK's JSON-RPC code of a request its transport could not deliver (jsonrpc2.ErrRejected).
const codeRejected = -32005

// maxRedirects bounds the redirects of one request to an HTTP or SSE server.
const maxRedirects = 10

var errRedirects = fmt.Errorf("it redirects more than %d times", maxRedirects)

// failure says what went wrong with the server's HTTP exchanges at url, in words; nil when nothing did.
func (t *headerTransport) failure(url string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case errors.Is(t.lastErr, errRedirects):
		return errRedirects
	case t.lastErr != nil:
		if w, ok := neterr.Words(t.lastErr); ok {
			return errors.New(w)
		}
		return fmt.Errorf("it cannot be reached at %s", url)
	case t.last >= 400:
		return fmt.Errorf("it answered HTTP %d %s: is %s its MCP endpoint?", t.last, http.StatusText(t.last), url)
	case t.lastBad != "":
		return fmt.Errorf("it answered with %s, not MCP messages: is %s its MCP endpoint?", t.lastBad, url)
	}
	return nil
}

func (h *Host) baseTransport() http.RoundTripper {
	if h.opts.HTTP != nil && h.opts.HTTP.Transport != nil {
		return h.opts.HTTP.Transport
	}
	return http.DefaultTransport.(*http.Transport).Clone()
}

var errTooLarge = fmt.Errorf("the response is over %d MiB", MaxMessage>>20)

// limitedBody fails a body past its bound instead of holding it.
type limitedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.r.Close() }
