package cli

import (
	"context"
	"errors"
	"io"
	"runtime/debug"
	"strings"
	"testing"
)

// TestStrayArgumentIsRefused: acp, setup and undo take nothing but flags; a stray word is refused before anything
// runs, naming the subcommand and its help.
func TestStrayArgumentIsRefused(t *testing.T) {
	t.Setenv("GARUDA_HOME", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acp", "x"}, `acp: unexpected argument "x" (see garuda acp --help)`},
		{[]string{"acp", "setup", "--force", "x"}, `setup: unexpected argument "x" (see garuda setup --help)`},
		{[]string{"setup", "x"}, `setup: unexpected argument "x" (see garuda setup --help)`},
		{[]string{"undo", "x", "--list"}, `undo: unexpected argument "x" (see garuda undo --help)`},
	} {
		err := Main(context.Background(), c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("garuda %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
		if code := Report(io.Discard, err); code != 2 {
			t.Errorf("garuda %s: exit status %d, want 2 (a usage error)", strings.Join(c.args, " "), code)
		}
	}
}

// A command line that is wrong exits 2 whatever is wrong in it (a flag, a word, the command itself), as no command
// at all does; other failures exit 1.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Setenv("GARUDA_HOME", t.TempDir())
	for _, args := range [][]string{{}, {"frobnicate"}, {"undo", "--nope"}, {"audit", "verify", "--nope"}} {
		if code := Report(io.Discard, Main(context.Background(), args)); code != 2 {
			t.Errorf("garuda %s: exit status %d, want 2", strings.Join(args, " "), code)
		}
	}
	if code := Report(io.Discard, errors.New("the broker is gone")); code != 1 {
		t.Errorf("another failure: exit status %d, want 1", code)
	}
}

// garuda run's start runs at GOGC 200 and its end restores the pace it found, once; a GOGC that is off, or above,
// is left as it is.
func TestQuietStart(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	over := quietStart()
	if got := debug.SetGCPercent(-1); got != startGCPercent {
		t.Errorf("during the start GOGC is %d, want %d", got, startGCPercent)
	}
	debug.SetGCPercent(startGCPercent)
	over()
	over()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after the start GOGC is %d, want 100 again", got)
	}
	for _, user := range []int{-1, 400} {
		debug.SetGCPercent(user)
		quietStart()()
		if got := debug.SetGCPercent(100); got != user {
			t.Errorf("GOGC %d of the user's became %d", user, got)
		}
	}
}
