package broker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"google.golang.org/grpc"

	"github.com/garuda-dev/garuda/broker/audit"
	"github.com/garuda-dev/garuda/broker/peercred"
	"github.com/garuda-dev/garuda/internal/version"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// ManagedPolicyPath is the team's managed policy file. It is fixed at build time (-ldflags -X) or by the serve
// mode's own --managed-policy flag, never by an environment variable an editor could set.
var ManagedPolicyPath = "/etc/garuda/policy.json"

// ChildArg is the hidden subcommand `garuda acp` starts the broker with: serve on the socketpair end at fd 3.
const ChildArg = "child"

const usage = `usage: garuda-exec <command>

  serve --listen PATH [--allow-uid N]... [--socket-group G] [--managed-policy FILE]
                 serve the broker API on a unix socket (for teams that run the broker as its own service)
  doctor         print what the command sandbox enforces on this machine
  version        print the version

garuda acp starts garuda-exec by itself; you need these only to run it as a service or to check the machine.`

// Main runs garuda-exec with its arguments (without the program name).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintf(stdout, "garuda-exec %s (broker API v1)\n", version.Version)
		return nil
	case "doctor":
		return doctor(stdout)
	case "serve":
		return serve(ctx, args[1:], stderr)
	case ChildArg:
		return child(ctx, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// home is $GARUDA_HOME, else ~/.garuda; read once at start.
func home() (string, error) {
	if h := os.Getenv("GARUDA_HOME"); h != "" {
		if !filepath.IsAbs(h) {
			return "", fmt.Errorf("GARUDA_HOME=%s: must be an absolute path", h)
		}
		return filepath.Clean(h), nil
	}
	uh, err := os.UserHomeDir()
	if err == nil && !filepath.IsAbs(uh) {
		err = fmt.Errorf("$HOME=%s is not an absolute path", uh)
	}
	if err != nil {
		return "", fmt.Errorf("find the home folder (set GARUDA_HOME): %w", err)
	}
	return filepath.Join(uh, ".garuda"), nil
}

func newConfig(managed string, stderr io.Writer) (Config, error) {
	h, err := home()
	if err != nil {
		return Config{}, err
	}
	return Config{
		Version:       version.Version,
		Home:          h,
		ManagedPolicy: managed,
		Log:           slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, nil
}

type uidList []uint32

func (u *uidList) String() string { return fmt.Sprint(*u) }
func (u *uidList) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return fmt.Errorf("--allow-uid %q: not a uid number", s)
	}
	*u = append(*u, uint32(n))
	return nil
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "socket path to serve on")
	group := fs.String("socket-group", "", "group that may connect (the socket and its folder are given to it)")
	managed := fs.String("managed-policy", ManagedPolicyPath, "the team's managed policy file")
	var uids uidList
	fs.Var(&uids, "allow-uid", "uid that may use the broker (repeatable; default: the broker's own uid)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed; asking for it is no failure
	} else if err != nil {
		return err
	}
	if *listen == "" {
		return errors.New("serve: --listen PATH is required")
	}
	if len(uids) == 0 {
		uids = uidList{uint32(os.Getuid())}
	}
	cfg, err := newConfig(*managed, stderr)
	if err != nil {
		return err
	}
	ln, err := listenUnix(*listen, *group)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "garuda-exec: serving %s for uid %v\n", *listen, []uint32(uids))
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return run(ctx, cfg, ln, []uint32(uids))
}

// child serves the one connection garuda acp started it with (fd 3) and ends with it.
func child(ctx context.Context, stderr io.Writer) error {
	f := os.NewFile(3, "socketpair")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("the broker expects its socket on fd 3 (garuda acp starts it): %w", err)
	}
	cfg, err := newConfig(ManagedPolicyPath, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	ctx, gone := context.WithCancel(ctx)
	defer gone()
	// The front end's end of the socket closing (exit, crash, SIGKILL) is the broker's end.
	ln := newOneConn(c, gone)
	return run(ctx, cfg, ln, []uint32{uint32(os.Getuid())})
}

// run serves until ctx ends, then kills every command at once and returns.
func run(ctx context.Context, cfg Config, ln net.Listener, uids []uint32) error {
	// What the kernel enforces is probed once, in the background, before the first session asks; the messages of a
	// session's start are built while the front end connects.
	go probe()
	go execv1.WarmUp()
	svc := NewService(cfg)
	srv := NewServer(svc, uids)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	svc.Shutdown()
	srv.Stop()
	ln.Close()
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// NewServer is the broker's gRPC server as garuda-exec serves it: svc, reached only by the uids given, checked at
// the handshake and again on every call; a refused peer is logged and audited, and a connection's sessions end
// with it. Every test harness serves this too, so that what the broker's serving adds reaches its tests.
func NewServer(svc *Service, uids []uint32) *grpc.Server {
	pol := &peercred.Policy{UIDs: uids, OnRefuse: svc.refused, OnClose: svc.ConnClosed}
	srv := grpc.NewServer(
		grpc.Creds(peercred.Credentials(pol)),
		grpc.UnaryInterceptor(pol.UnaryInterceptor),
		grpc.StreamInterceptor(pol.StreamInterceptor),
	)
	execv1.RegisterExecServiceServer(srv, svc)
	return srv
}

// refused logs a refused peer: the refused client itself only sees an unavailable broker.
func (s *Service) refused(p peercred.Peer, reason error) {
	s.cfg.Log.Warn("refused a connection", "uid", p.UID, "pid", p.PID, "reason", reason)
	if err := s.record(audit.Record{Event: audit.EventRefusedConnection, Reason: reason.Error(),
		Detail: map[string]string{"uid": strconv.Itoa(int(p.UID)), "pid": strconv.Itoa(int(p.PID))}}, false); err != nil {
		s.cfg.Log.Warn("refused connection not audited", "err", err)
	}
}
