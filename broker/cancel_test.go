package broker

import (
	"testing"

	"github.com/garuda-dev/garuda/broker/sandbox"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// The grace the API states (execv1.CancelGrace, which front ends wait on) is the one the sandbox gives a cancelled
// command.
func TestCancelGraceIsTheAPIs(t *testing.T) {
	if sandbox.TermGrace != execv1.CancelGrace {
		t.Errorf("sandbox.TermGrace %v, the API's CancelGrace %v", sandbox.TermGrace, execv1.CancelGrace)
	}
}
