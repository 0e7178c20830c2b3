package attacks

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// TestMain lets the sandbox re-execute this test binary as its helper, and runs the memory flood's allocator.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	if len(os.Args) > 2 && os.Args[1] == mcptest.Arg {
		os.Exit(mcptest.Serve(os.Args[2])) // the MCP attacks' server, run by the broker in the sandbox
	}
	if len(os.Args) == 4 && os.Args[1] == brokerArg {
		os.Exit(serveBroker(os.Args[2], os.Args[3])) // a broker the crash tests SIGKILL (guard_crash_test.go)
	}
	if len(os.Args) == 3 && os.Args[1] == allocArg {
		os.Exit(allocate(os.Args[2]))
	}
	// The memory floods of these tests count against this binary's per-user limit only (and others' not here).
	restore := testenv.IsolateMemoryCgroup()
	code := m.Run()
	restore()
	os.Exit(code)
}

// within runs one call answering every question with ch, and fails when it takes longer than d (the broker is
// then still busy with it: the cleanup may have to wait for it to end).
func within(t *testing.T, c execv1.ExecServiceClient, sid string, op *execv1.Start, ch execv1.Choice,
	d time.Duration) (*execv1.Result, error) {
	t.Helper()
	cx, cancel := context.WithTimeout(brokertest.Ctx(t), d)
	defer cancel()
	began := time.Now()
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, cx, sid, op), ch)
	if status.Code(err) == codes.DeadlineExceeded {
		t.Errorf("%v: still running after %v (the broker is stuck on it)", op, time.Since(began).Round(time.Millisecond))
	}
	return res, err
}

// leaked reports whether a call reached a secret: its content shows it, or a write landed.
func leaked(res *execv1.Result, secret string) bool {
	return strings.Contains(res.GetContent(), secret)
}
