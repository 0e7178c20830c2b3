package netproxy

import (
	"os"
	"testing"

	"github.com/garuda-dev/garuda/broker/sandbox"
)

// TestMain lets this test binary be the sandbox's helper, for the benchmark of a sandboxed curl through the proxy.
func TestMain(m *testing.M) {
	sandbox.MaybeRunHelper()
	os.Exit(m.Run())
}
