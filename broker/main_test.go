package broker

import (
	"os"
	"testing"

	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/internal/testenv"
)

// TestMain lets the sandbox re-execute this test binary as its helper (the probe, a session's network holder, a
// command's pid 1), as garuda-exec's main does; without it the helper would run the tests again.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	restore := testenv.IsolateMemoryCgroup() // the commands' per-user memory limit is this binary's alone
	code := m.Run()
	restore()
	os.Exit(code)
}
