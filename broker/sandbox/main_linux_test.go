// TestMain: the test binary is also the sandbox's helper (unless $SANDBOX_HELPER names one) and the attack tool
// (tool_linux_test.go); the tests run in a memory cgroup of their own.

package sandbox

import (
	"os"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

func TestMain(m *testing.M) {
	MaybeRunHelper()
	// SANDBOX_HELPER=path/garuda-sandbox: the tests and benchmarks run that helper instead of this test binary.
	testHelperFile = os.Getenv("SANDBOX_HELPER")
	if len(os.Args) > 2 && os.Args[1] == attackArg {
		os.Exit(runAttack(os.Args[2:])) // the one helper process of this package's tests
	}
	restore := testenv.IsolateMemoryCgroup()
	code := m.Run()
	restore()
	os.Exit(code)
}
