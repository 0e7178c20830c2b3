package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/garuda-dev/garuda/internal/testproc"
)

// compareOnce measures another ACP agent (argv, e.g. codex-acp) the way a run measures garuda's start: spawn →
// initialize answered, the request written at once and waiting in the pipe. The agent runs in the workspace w
// (HOME, TMPDIR and its working folder; PATH the caller's), the same for every run, so that the warm-up run pays for
// what a first start sets up, as garuda's warm-up pays for the sandbox probe; in a process group that is killed once
// the answer is read.
func (r *runner) compareOnce(ctx context.Context, w *workspace, argv []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "TMPDIR=" + w.tmp}
	// Its own group, so that whatever it starts goes with it; and it dies with procbench.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr := &tail{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, fmt.Errorf("stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, fmt.Errorf("stdout pipe: %w", err)
	}
	ed := newEditor(stdin)
	name := filepath.Base(argv[0])
	t0 := time.Now()
	if err := testproc.StartBelow(cmd); err != nil {
		return 0, fmt.Errorf("start %s: %w", strings.Join(argv, " "), err)
	}
	waited := make(chan struct{})
	go func() {
		ed.read(stdout)
		cmd.Wait()
		close(waited)
	}()
	defer func() {
		stdin.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	}()
	ch, err := ed.send("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	if err != nil {
		return 0, err
	}
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	at, err := await(ctx, ch, "initialize", r.timeout, &init)
	if err != nil {
		return 0, fmt.Errorf("%s: %w\nits stderr (last lines):\n%s", name, err, stderr.String())
	}
	if init.ProtocolVersion != 1 {
		return 0, fmt.Errorf("%s initialize: protocolVersion %d, want 1", name, init.ProtocolVersion)
	}
	return at.Sub(t0), nil
}

// compareArgs splits -compare's value into the command and its arguments (by spaces; no quoting).
func compareArgs(s string) ([]string, error) {
	argv := strings.Fields(s)
	if len(argv) == 0 {
		return nil, errors.New("-compare: give the command of an ACP agent, e.g. -compare 'codex-acp'")
	}
	p, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("-compare: %w", err)
	}
	argv[0] = p
	return argv, nil
}
