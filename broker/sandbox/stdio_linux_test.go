package sandbox

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// A long-lived sandboxed process (an MCP server, a background process) talks over its own stdin and stdout while its
// stderr stays the output.
func TestStdinStdoutPipes(t *testing.T) {
	f := newFixture(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := f.spec(`while read -r line; do echo "got $line"; echo "log $line" >&2; done`)
	s.Stdin, s.Stdout = inR, outW
	done := make(chan *Result, 1)
	go func() {
		res, err := Run(context.Background(), s)
		if err != nil {
			t.Error(err)
		}
		outW.Close()
		done <- res
	}()
	lines := bufio.NewScanner(outR)
	for _, w := range []string{"one", "two"} {
		if _, err := io.WriteString(inW, w+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() || lines.Text() != "got "+w {
			t.Fatalf("stdout line %q (%v), want %q", lines.Text(), lines.Err(), "got "+w)
		}
	}
	inW.Close() // EOF ends the loop
	res := <-done
	if res == nil {
		t.FailNow()
	}
	if res.ExitCode != 0 || out(res) != "log one\nlog two" {
		t.Fatalf("exit %d, output (stderr only) %q", res.ExitCode, out(res))
	}
}

// Without Stdin a command reads /dev/null, as before.
func TestStdinDefaultsToDevNull(t *testing.T) {
	f := newFixture(t)
	if res := f.sandboxed(`cat; echo end`); out(res) != "end" {
		t.Fatalf("output %q", out(res))
	}
}

// UntilCancelled lifts the wall-clock limit; only the context ends the process. Its negative control: the same
// command with a short Timeout is ended by it.
func TestUntilCancelled(t *testing.T) {
	f := newFixture(t)
	for _, until := range []bool{false, true} {
		s := f.spec(`echo started; sleep 30`)
		s.Timeout, s.UntilCancelled = 300*time.Millisecond, until
		ctx, cancel := context.WithCancel(context.Background())
		done := startedRun(t, ctx, s)
		var res *Result
		select {
		case res = <-done:
		case <-time.After(2 * time.Second):
			cancel()
			res = <-done
		}
		cancel()
		if res.TimedOut == until || res.Cancelled != until {
			t.Fatalf("UntilCancelled=%v: timed out %v, cancelled %v", until, res.TimedOut, res.Cancelled)
		}
		if !strings.Contains(out(res), "started") {
			t.Fatalf("output %q", out(res))
		}
	}
}
