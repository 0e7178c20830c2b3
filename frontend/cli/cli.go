package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/garuda-dev/garuda/frontend/acpagent"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/confine"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Version is the binary's version, set at build time.
var Version = "0.16.0-dev"

const usage = `usage: garuda <command>

  acp [--model M] [--broker unix://PATH]   run as an agent for an editor (ACP over stdio)
  run [flags] PROMPT...                    run one prompt in this folder, in a terminal or CI (run --help)
  setup                                    choose a model and store its API key
  doctor [--broker unix://PATH]            check the broker and what its sandbox enforces here
  trust [DIR]                              trust a project's settings that loosen safety
  undo [--session ID] [--list]             undo the last change Garuda made in a session
  audit verify [FILE]                      check the audit log's hash chain
  version                                  print the version`

// Reported reports whether err only carries an exit code: what went wrong was already written.
func Reported(err error) bool {
	var ec exitError
	return errors.As(err, &ec)
}

// ExitCode is the process exit code for an error of Main.
func ExitCode(err error) int {
	var ec exitError
	if errors.As(err, &ec) {
		return int(ec)
	}
	return 1
}

type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// Main runs garuda with its arguments (without the program name).
func Main(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "acp":
		if len(args) > 1 && args[1] == "setup" {
			return setup(ctx, args[2:])
		}
		return acp(ctx, args[1:])
	case "run":
		return run(ctx, args[1:])
	case "setup":
		return setup(ctx, args[1:])
	case "doctor":
		return doctor(ctx, args[1:], os.Stdout)
	case "trust":
		return trust(ctx, args[1:])
	case "undo":
		return undo(ctx, args[1:])
	case "audit":
		return audit(ctx, args[1:])
	case "version", "--version":
		fmt.Printf("garuda %s (%s/%s)\n", Version, runtime.GOOS, runtime.GOARCH)
		return nil
	case "help", "-h", "--help":
		fmt.Println(usage)
		return nil
	}
	fmt.Fprintln(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// brokerFlag adds --broker, defaulting to GARUDA_BROKER.
func brokerFlag(fs *flag.FlagSet) *string {
	return fs.String("broker", os.Getenv("GARUDA_BROKER"), "unix://PATH of a broker that runs as a service (default: start garuda-exec)")
}

func connect(ctx context.Context, addr string) (*brokerconn.Broker, error) {
	return brokerconn.Connect(ctx, brokerconn.Options{Addr: addr, Stderr: os.Stderr})
}

func acp(ctx context.Context, args []string) error {
	protocol, err := guardStdout()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("acp", flag.ContinueOnError)
	model := fs.String("model", os.Getenv("GARUDA_MODEL"), "the model (a name from models.json or provider/model-id)")
	addr := brokerFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if runtime.GOOS == "windows" {
		return errors.New("native Windows is not supported; run Garuda in WSL")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	b, err := brokerconn.Start(ctx, brokerconn.Options{Addr: *addr, Stderr: os.Stderr})
	if err != nil {
		return err
	}
	defer b.Close()
	// The editor is answered at once; every broker call waits until the broker answered and the front end has
	// confined itself (loading the TLS roots alone takes about 10 ms).
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	go func() {
		if err := b.Ready(ctx); err != nil {
			fail(err)
			return
		}
		confineSelf()
		b.Open()
	}()
	err = acpagent.Serve(ctx, os.Stdin, protocol, acpagent.Options{
		Broker:     b.Client,
		BrokerDone: b.Done(),
		Version:    Version,
		Model:      *model,
		Getenv:     os.Getenv,
	})
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if err != nil {
		if berr := b.Err(); berr != nil {
			return berr
		}
		return err
	}
	return nil
}

// doctor prints which broker answers and what it enforces.
func doctor(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	addr := brokerFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintf(tw, "garuda\t%s\n", Version)
	if *addr == "" {
		p, err := brokerconn.Find()
		if err != nil {
			fmt.Fprintf(tw, "garuda-exec\tNOT FOUND: %v\n", err)
			return exitError(1)
		}
		fmt.Fprintf(tw, "garuda-exec\t%s\n", p)
	} else {
		fmt.Fprintf(tw, "broker\t%s\n", *addr)
	}
	b, err := connect(ctx, *addr)
	if err != nil {
		fmt.Fprintf(tw, "broker answers\tno: %v\n", err)
		return exitError(1)
	}
	defer b.Close()
	h, err := b.Client.Hello(ctx, &execv1.HelloRequest{})
	if err != nil {
		fmt.Fprintf(tw, "broker answers\tno: %v\n", err)
		return exitError(1)
	}
	fmt.Fprintf(tw, "broker answers\tyes: garuda-exec %s, API %s, pid %d, uid %d\n", h.BrokerVersion, h.ApiVersion, h.Pid, h.Uid)
	fmt.Fprintf(tw, "GARUDA_HOME\t%s\n", h.Home)
	fmt.Fprintln(tw, "\nsandbox\tenforced\tdetail")
	for _, f := range h.Sandbox {
		yes := "no"
		if f.Enforced {
			yes = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, yes, f.Detail)
	}
	if h.SandboxReady {
		fmt.Fprintln(tw, "\ncommands\twill run in the sandbox")
	} else {
		fmt.Fprintln(tw, "\ncommands\tREFUSED: the sandbox lacks what is required here (see above)")
	}
	if h.Uid == 0 {
		fmt.Fprintln(tw, "\t(the broker runs as root: a command has no capabilities, but it can read what root's uid can; run Garuda as a normal user)")
	}
	// The model as session/new would find it: the same Prepare, with the variables of this shell.
	prep, err := b.Client.Prepare(ctx, &execv1.PrepareRequest{Model: os.Getenv("GARUDA_MODEL"), EnvKeys: acpagent.EnvKeys(os.Getenv)})
	switch {
	case err != nil:
		fmt.Fprintf(tw, "\nmodel\tUNKNOWN: %v\n", err)
	case prep.GetAuthRequired() != "":
		fmt.Fprintf(tw, "\nmodel\tNOT SET UP: %s\n", prep.GetAuthRequired())
	default:
		m := prep.GetReady()
		key := "from the credentials file"
		if env := m.GetApiKeyEnv(); env != "" && os.Getenv(env) != "" {
			key = "from $" + env
		}
		fmt.Fprintf(tw, "\nmodel\t%s (%s, %s), key %s\n", m.GetName(), m.GetProvider(), m.GetModelId(), key)
	}
	for _, n := range prep.GetNotices() {
		fmt.Fprintf(tw, "\t%s\n", n)
	}
	return nil
}

// readLine reads one line from a terminal or a pipe.
func readLine(r *bufio.Reader) (string, error) {
	s, err := r.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && s != "") {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// confine takes the front end's file and exec power away once the broker runs; see package confine.
func confineSelf() {
	warning, err := confine.Self()
	if err != nil {
		fmt.Fprintln(os.Stderr, "garuda: could not confine the front end:", err)
	} else if warning != "" {
		fmt.Fprintln(os.Stderr, "garuda:", warning)
	}
}
