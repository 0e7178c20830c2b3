package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
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
