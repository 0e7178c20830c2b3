package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFailsClosedWithoutLandlockScoping(t *testing.T) {
	f := newFixture(t)
	testLandlockABI = 5
	defer func() { testLandlockABI = -1 }()
	s := f.spec("echo ran")
	r, err := Run(context.Background(), s)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "garuda-exec doctor") ||
		!strings.Contains(err.Error(), "Landlock ABI 5") {
		t.Fatalf("Run with Landlock ABI 5: %v", err)
	}
	if r != nil {
		t.Fatalf("the command ran: %q", r.Output)
	}
	// Team policy allows a weaker sandbox: it runs, and says so.
	s.AllowWeaker = true
	r, err = Run(context.Background(), s)
	if err != nil || out(r) != "ran" || len(r.Notices) == 0 || !strings.Contains(r.Notices[0], "weaker sandbox") {
		t.Fatalf("AllowWeaker run: %v %+v", err, r)
	}
}

func TestFailsClosedOnSetupError(t *testing.T) {
	f := newFixture(t)
	s := f.spec("echo ran")
	s.Writable = append(s.Writable, filepath.Join(f.base, "does-not-exist"))
	r, err := Run(context.Background(), s)
	if !errors.Is(err, ErrUnavailable) || strings.Contains(string(r.Output), "ran") {
		t.Fatalf("missing writable folder: err %v, output %q", err, r.Output)
	}
	t.Logf("error: %v", err)
}

// A helper that fails its set-up ends at once; a session network's holder reaps it at once, so the broker's hand-over
// (the OOM score) found its pid gone and reported "open /proc/<pid>/oom_score_adj: no such file or directory"
// instead of the set-up error (one command of a 20-minute soak). The failure is reported as itself, in both ways of
// starting the helper.
func TestSetupErrorOfAHelperGoneBeforeItsHandOver(t *testing.T) {
	f := newFixture(t)
	net, err := NewNetwork()
	if err != nil {
		t.Fatalf("NewNetwork: %v", err)
	}
	defer net.Close()
	testBeforeOOMScore = func(h *helper) {
		for deadline := time.Now().Add(10 * time.Second); !h.exited() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	defer func() { testBeforeOOMScore = nil }()
	for _, shared := range []*Network{net, nil} {
		s := f.spec("echo ran")
		s.Network = shared
		s.Writable = append(s.Writable, filepath.Join(f.base, "does-not-exist"))
		r, err := Run(context.Background(), s)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "does-not-exist") {
			t.Fatalf("session network %v: want the set-up error naming the missing folder, got %v", shared != nil, err)
		}
		if r != nil && strings.Contains(string(r.Output), "ran") {
			t.Fatalf("session network %v: the command ran: %q", shared != nil, r.Output)
		}
	}
	// A command after it runs as usual in the session's network.
	testBeforeOOMScore = nil
	s := f.spec("echo ran")
	s.Network = net
	if r := f.run(s); out(r) != "ran" {
		t.Fatalf("a command after it: %q", r.Output)
	}
}
