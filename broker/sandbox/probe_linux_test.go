// Probe: what the sandbox enforces on this machine.

package sandbox

import (
	"testing"
)

func TestProbe(t *testing.T) {
	rep := Probe()
	for _, f := range rep.Features {
		t.Logf("%-22s %-5v %s", f.Name, f.Enforced, f.Detail)
	}
	if m := rep.Missing(); len(m) > 0 {
		t.Errorf("missing on this machine: %v", m)
	}
}
