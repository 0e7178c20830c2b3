package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func benchFixture(b *testing.B) (root, tmp string) {
	base := b.TempDir()
	root, tmp = filepath.Join(base, "proj"), filepath.Join(base, "tmp")
	if err := os.Mkdir(root, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		b.Fatal(err)
	}
	return root, tmp
}

func benchTrue(b *testing.B, unsandboxed bool, net *Network) {
	root, tmp := benchFixture(b)
	s := Spec{Command: "true", Root: root, Writable: []string{tmp}, Env: BaseEnv(tmp, tmp, nil), Unsandboxed: unsandboxed,
		ReadOnly: []string{filepath.Join(root, ".git")}, Hidden: []string{filepath.Join(tmp, "nothing")}, Network: net}
	for b.Loop() {
		r, err := Run(context.Background(), s)
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%v %+v", err, r)
		}
	}
}

// BenchmarkTrueSandboxed and BenchmarkTrueUnsandboxed: the sandbox's set-up overhead is their difference.
func BenchmarkTrueSandboxed(b *testing.B)   { benchTrue(b, false, nil) }
func BenchmarkTrueUnsandboxed(b *testing.B) { benchTrue(b, true, nil) }

// BenchmarkTrueSandboxedSession is a command of a session whose network namespace exists already (every command
// but the session's first); BenchmarkSessionNetwork is what the first pays more: starting the holder.
func BenchmarkTrueSandboxedSession(b *testing.B) {
	n, err := NewNetwork()
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	benchTrue(b, false, n)
}

func BenchmarkSessionNetwork(b *testing.B) {
	for b.Loop() {
		n, err := NewNetwork()
		if err != nil {
			b.Fatal(err)
		}
		n.Close()
	}
}

// BenchmarkTrueSandboxedAfterPause is a command 50 ms after the last one ended (the timer stopped meanwhile), as
// commands come in use: a lock that quick successions keep cheap (cgroup v1's move of a process) is paid again.
func BenchmarkTrueSandboxedAfterPause(b *testing.B) {
	root, tmp := benchFixture(b)
	s := Spec{Command: "true", Root: root, Writable: []string{tmp}, Env: BaseEnv(tmp, tmp, nil),
		ReadOnly: []string{filepath.Join(root, ".git")}, Hidden: []string{filepath.Join(tmp, "nothing")}}
	for b.Loop() {
		b.StopTimer()
		time.Sleep(50 * time.Millisecond)
		b.StartTimer()
		if r, err := Run(context.Background(), s); err != nil || r.ExitCode != 0 {
			b.Fatalf("%v %+v", err, r)
		}
	}
}

// BenchmarkTruePlainExec is bash -c true with no helper at all, for reference.
func BenchmarkTruePlainExec(b *testing.B) {
	for b.Loop() {
		if _, err := plain(nil, "true"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCancel measures cancel to "every process gone" (Run returns only when the pid namespace is empty) for
// a command tree that obeys SIGTERM.
func BenchmarkCancel(b *testing.B) {
	root, tmp := benchFixture(b)
	var total time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		var once bool
		s := Spec{Command: "sleep 60 & sleep 60 & echo started; wait", Root: root, Writable: []string{tmp}, Env: BaseEnv(tmp, tmp, nil),
			OnOutput: func(p []byte) {
				if !once && strings.Contains(string(p), "started") {
					once = true
					close(started)
				}
			}}
		done := make(chan *Result, 1)
		go func() { r, _ := Run(ctx, s); done <- r }()
		<-started
		t0 := time.Now()
		cancel()
		r := <-done
		total += time.Since(t0)
		if r == nil || !r.Cancelled {
			b.Fatalf("not cancelled: %+v", r)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms-cancel/op")
}
