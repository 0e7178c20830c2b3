package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "procbench:", err)
		os.Exit(1)
	}
}

// run parses the flags, does one warm-up run and n measured runs, and prints the figures. A missed
// target is not an error: the figures are printed and the exit code stays 0.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("procbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin", "folder holding the built garuda, garuda-exec and garuda-sandbox")
	n := fs.Int("n", 10, "measured runs, after one warm-up run")
	asJSON := fs.Bool("json", false, "print the figures as JSON instead of a table")
	timeout := fs.Duration("timeout", 30*time.Second, "limit for each step of a run")
	verbose := fs.Bool("v", false, "print each run's figures on stderr")
	soakFor := fs.Duration("soak", 0, "instead of the runs: a soak of -sessions sessions in one garuda acp for this long")
	sessions := fs.Int("sessions", 20, "sessions of a -soak")
	replace := fs.Int("replace", 200, "a -soak's session is closed after this many turns and a new one opened in its "+
		"folder (0: never)")
	compare := fs.String("compare", "", "also measure this ACP agent's spawn → initialize in each run, e.g. 'codex-acp' (split at spaces)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("-n %d: want at least 1 run", *n)
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("procbench reads /proc and runs the Linux sandbox: %s is not supported", runtime.GOOS)
	}
	r := &runner{timeout: *timeout}
	// One TMPDIR for every run, as a machine has one /tmp: the broker keeps its sandbox probe there for the boot,
	// so the warm-up run pays for it and the measured runs start as a user's second start does.
	tmp, err := os.MkdirTemp("", "garuda-procbench-tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r.tmp = tmp
	if r.garuda, err = binary(*bin, "garuda"); err != nil {
		return err
	}
	if r.exec, err = binary(*bin, "garuda-exec"); err != nil {
		return err
	}

	if *soakFor > 0 {
		if *sessions < 1 || *replace < 0 {
			return fmt.Errorf("-sessions %d -replace %d: want at least 1 session and no negative length", *sessions, *replace)
		}
		cfg := soakConfig{sessions: *sessions, length: *soakFor, replaceAfter: *replace}
		res, err := r.soak(ctx, cfg)
		if err != nil {
			return fmt.Errorf("soak: %w", err)
		}
		res.report(stdout, cfg)
		if bad := res.check(); len(bad) > 0 {
			return fmt.Errorf("soak failed:\n  %s", strings.Join(bad, "\n  "))
		}
		fmt.Fprintln(stdout, "soak: no growth past the bounds")
		return nil
	}
	var other []string // the agent of -compare, and its home
	var otherHome *workspace
	if *compare != "" {
		if other, err = compareArgs(*compare); err != nil {
			return err
		}
		if otherHome, err = newWorkspace("garuda-procbench-compare-", ""); err != nil {
			return err
		}
		defer otherHome.remove()
	}
	// once is one run: garuda's, then the other agent's start right after it, so that both meet the same load.
	once := func(i int) (sample, error) {
		s, err := r.once(ctx, i)
		if err == nil && other != nil {
			s.otherInit, err = r.compareOnce(ctx, otherHome, other)
		}
		return s, err
	}
	if _, err := once(0); err != nil {
		return fmt.Errorf("warm-up run: %w", err)
	}
	samples := make([]sample, 0, *n)
	for i := 1; i <= *n; i++ {
		s, err := once(i)
		if err != nil {
			return fmt.Errorf("run %d of %d: %w", i, *n, err)
		}
		if *verbose {
			fmt.Fprintf(stderr, "run %2d: init %s  new %s  turn %s  cancel→gone %s (%d processes)  mem %.1f+%.1f MiB  exit %s\n",
				i, s.spawnInit, s.newSession, s.turn, s.cancelGone, s.watched, mib(s.memFront), mib(s.memBroker), s.exit)
		}
		samples = append(samples, s)
	}
	rep := report{Machine: describeMachine(), Runs: *n, Figures: figures(samples)}
	if other != nil {
		rep.Compared = strings.Join(other, " ")
		rep.Figures = append(rep.Figures, compareFigures(samples, filepath.Base(other[0]))...)
	}
	for _, s := range samples {
		rep.Questions += s.questions
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.table(stdout)
	return nil
}

// binary returns the absolute, symlink-free path of name in dir, as /proc/PID/exe shows it.
func binary(dir, name string) (string, error) {
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("locate %s in %s: %w", name, dir, err)
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return "", fmt.Errorf("locate %s (run make build first): %w", name, err)
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("locate %s: %w", name, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// machine describes where the figures were measured.
type machine struct {
	CPUs    int    `json:"cpus"`
	CPU     string `json:"cpu"`
	Kernel  string `json:"kernel"`
	MemMiB  int64  `json:"mem_mib"`
	Go      string `json:"go"`
	Machine string `json:"arch"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Machine: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(l, "MemTotal: %d kB", &kb); err == nil {
				m.MemMiB = kb >> 10
				break
			}
		}
	}
	return m
}
