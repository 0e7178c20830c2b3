package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/runner"
	"github.com/garuda-dev/garuda/internal/version"
)

const runUsage = `usage: garuda run [flags] PROMPT...   (or the prompt on stdin)

Runs one prompt in the project folder as a session of the agent an editor drives: the same broker, policy,
sandbox and audit log. The answer streams to stdout; tool calls (one line each), thoughts, notices and what
changed go to stderr. Questions are asked on the terminal; with no terminal, the flags below answer them and
every other question is denied. Team policy and settings rules apply first, as everywhere.

flags:
  --cwd DIR          the project folder (default: the current folder)
  --model M          the model (a name from models.json or provider/model-id; default GARUDA_MODEL, models.json)
  --mode plan|build  plan reads and asks before any change (default build)
  --resume ID        continue an earlier session (from an editor or a run; its id is in --json's session event
                     and in the editor's history) with its whole conversation
  --continue         continue the newest session of the project folder
  --max-steps N      at most N model requests in the turn
  --json             stdout carries only JSON lines, one event each (session, text, thought, tool_call,
                     tool_update, question, notice, plan, error, stop)
  --quiet            no thoughts
  --allow-edits      allow writes and edits inside the project folder without asking, except of protected paths
                     (git's hooks and configs, editors' and tools' files that run later): those only a person allows
  --allow-commands   allow sandboxed commands that the policy asks about
  --allow-mcp SERVER allow the MCP server SERVER: its consent (kept, pinned to the server's definition, as an
                     answer is) and each call of its tools; repeat it for each server
  --allow-host HOST  allow network access to exactly HOST (any port): web_fetch, and the connections of sandboxed
                     commands through Garuda's proxy; no scheme, port or wildcard; repeat it for each host
  --allow-web-search allow the provider's server-side web search (Anthropic's API) for the session
  --dangerously-allow-outside-sandbox
                     allow commands outside the sandbox and files outside the project folder
  --broker unix://PATH  a broker that runs as a service (default: start garuda-exec)

Ctrl-C, SIGTERM and SIGHUP cancel the turn (the running command is killed); a second one stops at once.

exit status: 0 the turn ended normally; 2 usage; 3 setup (no model, a broken configuration, a folder Garuda
cannot open); 4 the model refused; 5 the model hit its output limit; 6 the turn hit its step or token limit;
7 a model or provider error; 130 cancelled; 141 stdout was closed.`

// maxRunPrompt bounds a prompt given to garuda run; a larger input belongs in a file the prompt names.
const maxRunPrompt = 256 << 10

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cwd := fs.String("cwd", "", "")
	model := fs.String("model", os.Getenv("GARUDA_MODEL"), "")
	mode := fs.String("mode", "", "")
	resume := fs.String("resume", "", "")
	cont := fs.Bool("continue", false, "")
	maxSteps := fs.Int("max-steps", 0, "")
	jsonOut := fs.Bool("json", false, "")
	quiet := fs.Bool("quiet", false, "")
	var allow runner.Allow
	fs.BoolVar(&allow.Edits, "allow-edits", false, "")
	fs.BoolVar(&allow.Commands, "allow-commands", false, "")
	fs.BoolVar(&allow.OutsideSandbox, "dangerously-allow-outside-sandbox", false, "")
	fs.BoolVar(&allow.WebSearch, "allow-web-search", false, "")
	fs.Func("allow-mcp", "", func(v string) error { // repeatable, one server each
		if strings.TrimSpace(v) == "" {
			return errors.New("give the name of an MCP server")
		}
		allow.MCP = append(allow.MCP, v)
		return nil
	})
	fs.Func("allow-host", "", func(v string) error { // repeatable, one host each
		h, err := runner.NormHost(v)
		if err != nil {
			return err
		}
		allow.Hosts = append(allow.Hosts, h)
		return nil
	})
	addr := brokerFlag(fs)
	words, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Println(runUsage)
		return nil
	}
	// fail reports an error before the run starts: on stderr, and with --json as the run's error event on stdout too,
	// which is all a CI job may read, then the stop event every run ends with (no stop reason: no turn ran).
	fail := func(code int, msg string) error {
		fmt.Fprintf(os.Stderr, "garuda run: %s\n", msg)
		if *jsonOut {
			runner.FailedJSON(os.Stdout, msg, code)
		}
		return exitError(code)
	}
	usageErr := func(msg string) error {
		err := fail(runner.ExitUsage, msg)
		fmt.Fprintln(os.Stderr, "(garuda run --help shows the flags)")
		return err
	}
	if err != nil {
		return usageErr(flagWords(err))
	}
	if *mode != "" && *mode != "plan" && *mode != "build" {
		return usageErr(fmt.Sprintf("--mode %q: use plan or build", *mode))
	}
	if *resume != "" && *cont {
		return usageErr("--resume and --continue name different sessions: give one")
	}
	if isSet(fs, "cwd") && *cwd == "" {
		return usageErr("--cwd is empty: name the project folder, or leave the flag out for the current folder")
	}
	if isSet(fs, "max-steps") && *maxSteps < 1 {
		return usageErr("--max-steps must be at least 1")
	}
	prompt := strings.Join(words, " ")
	if prompt == "" {
		if isTerminal(0) {
			return usageErr("no prompt: give it as arguments (garuda run \"what does this project do?\") or on stdin")
		}
		b, err := io.ReadAll(io.LimitReader(os.Stdin, maxRunPrompt+1))
		if err != nil {
			return usageErr("read the prompt from stdin: " + err.Error())
		}
		prompt = string(b)
	}
	if len(prompt) > maxRunPrompt {
		return usageErr(fmt.Sprintf("the prompt is over %d KiB; put long input in a file in the project and name it in "+
			"the prompt", maxRunPrompt>>10))
	}
	if strings.TrimSpace(prompt) == "" {
		return usageErr("the prompt is empty")
	}
	dir, err := projectDir(*cwd)
	if err != nil {
		return fail(runner.ExitSetup, err.Error())
	}

	startOver := quietStart()
	defer startOver()

	// The terminal for questions is opened before the front end confines itself, so that a prompt on stdin still
	// gets its questions.
	var tty *os.File
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		tty = f
		defer f.Close()
	}
	stdout, err := guardStdout() // stray writes to fd 1 (a child's, a library's) land on stderr, not in the answer
	if err != nil {
		return err
	}
	// Ctrl-C, a kill, and a terminal that went away (SIGHUP: an SSH connection dropped) all cancel the turn cleanly.
	interrupt := make(chan os.Signal, 2)
	signal.Notify(interrupt, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(interrupt)
	// A closed stdout (| head) is a cancel, not a death by SIGPIPE that would leave the broker's commands behind.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	outputClosed := make(chan struct{})
	var closeOnce sync.Once
	closed := func() { closeOnce.Do(func() { close(outputClosed) }) }
	go func() {
		if _, ok := <-pipe; ok {
			closed()
		}
	}()
	go watchPipeReader(stdout, closed) // a reader that went away is seen at once, not at the next write

	b, ctx, err := startBroker(ctx, brokerconn.Options{Addr: *addr, OwnGroup: true}, nil)
	if err != nil {
		return fail(runner.ExitSetup, err.Error())
	}
	defer b.Close()
	o := runner.Options{
		Prompt: prompt, Cwd: dir, Model: *model, Mode: *mode, Resume: *resume, Continue: *cont, MaxSteps: *maxSteps,
		JSON: *jsonOut, Quiet: *quiet,
		Allow: allow, Stdout: stdout, Stderr: os.Stderr, Styled: isTerminal(2) && !*jsonOut,
		Interrupt: interrupt, OutputClosed: outputClosed, Started: startOver,
		Broker: b.Client, BrokerDone: b.Done(), BrokerErr: b.Why, Version: version.Version, Getenv: os.Getenv,
	}
	if tty != nil {
		o.TTY = tty
	}
	if code := runner.Run(ctx, o); code != runner.ExitOK {
		return exitError(code)
	}
	return nil
}

// projectDir is the absolute project folder of --cwd (default: the current folder), checked to be a folder the
// user can read.
func projectDir(cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("the current folder: %w", err)
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("--cwd %s: %w", cwd, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", fmt.Errorf("cannot open the project folder %s: %w", abs, errors.Unwrap(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.IsDir() {
		return "", fmt.Errorf("the project folder %s is not a folder", abs)
	}
	if _, err := f.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("cannot read the project folder %s: %w", abs, errors.Unwrap(err))
	}
	return abs, nil
}

// startGCPercent is the collector's pace (GOGC) while garuda run starts: its first collection comes at an 8 MiB heap
// instead of Go's 4 MiB.
const startGCPercent = 200

// quietStart puts off the front end's first garbage collection until its start is over, and returns the function
// that ends the start (once; garuda run calls it at the model's first output). The start allocates 3–4 MiB, 2 MiB of
// it kept (the ACP SDK's two 1 MiB line buffers of the in-process connection, the SDKs' and protobuf's tables), which
// at Go's default pace sets a collection off in the middle of it: a core of two for about a millisecond while the
// broker starts on the other (about 1.5 ms of the first byte, bench/README.md). A GOGC of the user's that is off or
// above it stays.
func quietStart() (over func()) {
	old := debug.SetGCPercent(startGCPercent)
	if old < 0 || old >= startGCPercent {
		debug.SetGCPercent(old)
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(func() { debug.SetGCPercent(old) }) }
}
