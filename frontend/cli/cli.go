package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"

	"github.com/garuda-dev/garuda/frontend/acpagent"
	"github.com/garuda-dev/garuda/frontend/acpagent/acpinit"
	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/confine"
	"github.com/garuda-dev/garuda/internal/featuretable"
	"github.com/garuda-dev/garuda/internal/version"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

const usage = `usage: garuda <command> [flags]

  acp [--model M] [--broker unix://PATH]   run as an agent for an editor (ACP over stdio)
  run [flags] PROMPT...                    run one prompt in this folder, in a terminal or CI (run --help)
  setup [--provider P] [--model M] [--key-stdin] [--test] [--force]
                                           choose a model and store its API key
  doctor [--broker unix://PATH]            check the broker, its sandbox and the model set up here
  trust [DIR] [--yes]                      trust a project's settings that loosen safety
  undo [--session ID] [--list]             undo the last change Garuda made in a session
  audit verify [FILE]                      check the audit log's hash chain
  version                                  print the version

Every command takes --broker unix://PATH (default $GARUDA_BROKER) and --help.`

// Report prints an error of Main for the user, once, and returns the process exit code: 0 for --help, the code of
// a command that has already said why it failed, 2 for a command line that is wrong, else 1.
func Report(w io.Writer, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ec exitError
	if errors.As(err, &ec) {
		return int(ec)
	}
	fmt.Fprintln(w, "garuda:", err)
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// errUsage marks an error in the command line (a flag, an argument): exit status 2, as for no command at all.
var errUsage = errors.New("usage")

// usageError is a command-line error, said in words; errors.Is(err, errUsage) holds.
type usageError struct{ words string }

func (e usageError) Error() string        { return e.words }
func (e usageError) Is(target error) bool { return target == errUsage }

// exitError is an exit code whose reason the command has already printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// parseFlags parses a subcommand's flags, before and after its arguments (`trust DIR --yes`). --help prints the
// usage on stdout and returns flag.ErrHelp; a wrong flag is an error that names the usage.
func parseFlags(fs *flag.FlagSet, args []string, synopsis string) error {
	fs.SetOutput(io.Discard)
	positional, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Printf("usage: garuda %s\n\n", synopsis)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		return flag.ErrHelp
	}
	if err != nil {
		return usageError{fmt.Sprintf("%s: %s (see garuda %s --help)", fs.Name(), flagWords(err), fs.Name())}
	}
	// The parsed flags stay; the positional arguments become fs.Args().
	return fs.Parse(append([]string{"--"}, positional...))
}

// flagWords is a flag package's parse error in the words of the usage, which spells flags with two dashes: "unknown
// flag --x", "--x needs a value", `--max-steps "many": give a whole number`, not "flag needs an argument: -x" or
// "parse error".
func flagWords(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	// invalid value "V" for flag -NAME: WHY, and invalid boolean value "V" for -NAME: WHY
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		rest, ok = strings.CutPrefix(msg, "invalid boolean value ")
	}
	value, after, found := strings.Cut(rest, " for ")
	if !ok || !found {
		return msg
	}
	name, why, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(after, "flag "), "-"), ": ")
	name = strings.TrimPrefix(name, "-")
	switch {
	case strings.HasPrefix(msg, "invalid boolean value "):
		why = "give true or false"
	case why == "parse error":
		why = "give a whole number"
	case why == "value out of range":
		why = "the number is too large"
	default:
		return "--" + name + ": " + why // a flag's own check says what is wrong with the value
	}
	return fmt.Sprintf("--%s %s: %s", name, value, why)
}

// isSet reports whether the flag name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseFlagsNoArgs is parseFlags for a subcommand that takes no other argument than its flags.
func parseFlagsNoArgs(fs *flag.FlagSet, args []string, synopsis string) error {
	if err := parseFlags(fs, args, synopsis); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected argument %q (see garuda %s --help)", fs.Name(), fs.Arg(0), fs.Name())}
	}
	return nil
}

// parseInterspersed parses flags anywhere among the arguments and returns the others in order; "--" ends the
// flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return append(words, rest...), nil
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// Main runs garuda with its arguments (without the program name).
func Main(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return exitError(2)
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
		fmt.Printf("garuda %s (%s/%s)\n", version.Version, runtime.GOOS, runtime.GOARCH)
		return nil
	case "help", "-h", "--help":
		fmt.Println(usage)
		return nil
	}
	// A usage error, like no command at all: exit status 2.
	fmt.Fprintf(os.Stderr, "%s\n\ngaruda: unknown command %q (see the list above)\n", usage, args[0])
	return exitError(2)
}

// brokerFlag adds --broker, defaulting to GARUDA_BROKER.
func brokerFlag(fs *flag.FlagSet) *string {
	return fs.String("broker", os.Getenv("GARUDA_BROKER"), "unix://PATH of a broker that runs as a service (default: start garuda-exec)")
}

func connect(ctx context.Context, addr string) (*brokerconn.Broker, error) {
	return brokerconn.Connect(ctx, brokerconn.Options{Addr: addr})
}

func acp(ctx context.Context, args []string) error {
	early := acpinit.Take() // the input as read from the package initialisation, its initialize answered there
	fs := flag.NewFlagSet("acp", flag.ContinueOnError)
	model := fs.String("model", os.Getenv("GARUDA_MODEL"), "the model (a name from models.json or provider/model-id; default $GARUDA_MODEL)")
	addr := brokerFlag(fs)
	if err := parseFlagsNoArgs(fs, args, "acp [--model M] [--broker unix://PATH]"); err != nil {
		return err
	}
	protocol, err := guardStdout()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if early != nil && early.Caught() {
		// SIGTERM or SIGINT came between the early answer to initialize and here: the same clean shutdown.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	// The broker's connection, its Hello and the confinement wait until the editor's first message is answered:
	// the broker is not ready before that anyway, and the editor's initialize is answered sooner without them.
	answered := &firstWrite{w: protocol, done: make(chan struct{})}
	var in io.Reader = os.Stdin
	if early != nil {
		in = early
		go func() {
			if early.Answered() {
				answered.once.Do(func() { close(answered.done) })
			}
		}()
	}
	// An editor whose first message is not an initialize (a session/new at once) needs the broker to be answered:
	// waiting for the first answer would wait for ever.
	in = &firstLine{r: in, notInit: func() { answered.once.Do(func() { close(answered.done) }) }}
	b, ctx, err := startBroker(ctx, brokerconn.Options{Addr: *addr}, answered.done)
	if err != nil {
		return err
	}
	defer b.Close()
	err = acpagent.Serve(ctx, in, answered, acpagent.Options{
		Broker:     b.Client,
		BrokerDone: b.Done(),
		Version:    version.Version,
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

// startBroker starts (or reaches) the broker, says Hello to it at once (the connection is then set up by the time
// the broker serves), and confines the front end as soon as the broker's process has started, while the broker
// initialises. The editor is answered at once; every other broker call waits until the front end has confined
// itself (loading the TLS roots alone takes about 10 ms), and goes out beside the Hello, not after it. The context
// returned ends, with the broker's error as its cause, when the broker does not answer the Hello.
func startBroker(ctx context.Context, o brokerconn.Options, after <-chan struct{}) (*brokerconn.Broker, context.Context, error) {
	b, err := brokerconn.Start(ctx, o)
	if err != nil {
		return nil, ctx, err
	}
	ctx, fail := context.WithCancelCause(ctx)
	go func() {
		if after != nil {
			<-after
		}
		if err := b.Ready(ctx); err != nil {
			fail(err)
		}
	}()
	go func() {
		<-b.Spawned() // garuda-exec is executed: the front end needs no more power to start it
		if after != nil {
			<-after
		}
		confineSelf()
		b.Open()
	}()
	return b, ctx, nil
}

// firstLine is a reader that calls notInit when the first line read through it is not an initialize request.
type firstLine struct {
	r       io.Reader
	line    []byte // the first line so far, while it is read
	done    bool
	notInit func()
}

func (f *firstLine) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if !f.done {
		chunk := p[:n]
		i := bytes.IndexByte(chunk, '\n')
		if i >= 0 {
			chunk = chunk[:i+1]
		}
		f.line = append(f.line, chunk[:min(len(chunk), maxFirstLine-len(f.line))]...)
		if i >= 0 || err != nil || len(f.line) >= maxFirstLine {
			f.done = true
			if !acpinit.IsInitialize(f.line) {
				f.notInit()
			}
			f.line = nil
		}
	}
	return n, err
}

// maxFirstLine bounds what firstLine keeps; no editor's initialize is longer.
const maxFirstLine = 64 << 10

// firstWrite is a writer that says when it was first written to.
type firstWrite struct {
	w    io.Writer
	once sync.Once
	done chan struct{}
}

func (f *firstWrite) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.once.Do(func() { close(f.done) })
	return n, err
}

// doctor prints which broker answers and what it enforces.
func doctor(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	addr := brokerFlag(fs)
	if err := parseFlags(fs, args, "doctor [--broker unix://PATH]"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintf(tw, "garuda\t%s\n", version.Version)
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
		fmt.Fprintf(tw, "broker answers\tno: %v\n", brokerconn.Words(err))
		return exitError(1)
	}
	defer b.Close()
	h, err := b.Client.Hello(ctx, &execv1.HelloRequest{})
	if err != nil {
		fmt.Fprintf(tw, "broker answers\tno: %v\n", brokerconn.Words(err))
		return exitError(1)
	}
	fmt.Fprintf(tw, "broker answers\tyes: garuda-exec %s, API %s, pid %d, uid %d\n", h.BrokerVersion, h.ApiVersion, h.Pid, h.Uid)
	fmt.Fprintf(tw, "GARUDA_HOME\t%s\n", h.Home)
	fmt.Fprintln(tw, "\nsandbox\tenforced\tdetail")
	rows := make([]featuretable.Row, 0, len(h.Sandbox))
	for _, f := range h.Sandbox {
		rows = append(rows, featuretable.Row{Name: f.GetName(), Enforced: f.GetEnforced(), Detail: f.GetDetail()})
	}
	featuretable.Write(tw, rows)
	if h.SandboxReady {
		fmt.Fprintln(tw, "\ncommands\twill run in the sandbox")
	} else {
		fmt.Fprintln(tw, "\ncommands\tREFUSED: the sandbox lacks what is required here (see above)")
	}
	if h.Uid == 0 {
		fmt.Fprintln(tw, "\t(the broker runs as root: a command has no capabilities, but it can read what root's uid can; "+
			"run Garuda as a normal user)")
	}
	// The model as session/new would find it: the same Prepare, with the variables of this shell.
	prep, err := b.Client.Prepare(ctx, &execv1.PrepareRequest{Model: os.Getenv("GARUDA_MODEL"), EnvKeys: acpagent.EnvKeys(os.Getenv)})
	broken := false
	switch {
	case err != nil:
		// A configuration that cannot be read is broken: doctor fails, with the broker's words.
		fmt.Fprintf(tw, "\nmodel\tBROKEN: %v\n", brokerconn.Words(err))
		broken = true
	case prep.GetAuthRequired() != "":
		fmt.Fprintf(tw, "\nmodel\tNOT SET UP: %s\n", prep.GetAuthRequired())
	default:
		m := prep.GetReady()
		fmt.Fprintf(tw, "\nmodel\t%s (%s, %s), %s\n", m.GetName(), m.GetProvider(), m.GetModelId(), keyLine(m, os.Getenv))
	}
	for _, n := range prep.GetNotices() {
		fmt.Fprintf(tw, "\t%s\n", n)
	}
	if broken {
		return exitError(1)
	}
	return nil
}

// keyLine says where a ready model's key comes from, never the key: the variable, the credentials file, or no key
// at all (a local server that needs none).
func keyLine(m *execv1.ModelSettings, getenv func(string) string) string {
	switch env := m.GetApiKeyEnv(); {
	case env != "" && getenv(env) != "":
		return "key from $" + env
	case m.GetApiKey() != "":
		return "key from the credentials file"
	default:
		return "no key (the provider needs none)"
	}
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
