package testenv

import "testing"

// A command that is there is found; one that is not fails the test (shown on a recorder, not on this test).
func TestNeedCommand(t *testing.T) {
	if p := NeedCommand(t, "sh", "dash"); p == "" {
		t.Fatal("sh not found")
	}
	r := &recorder{TB: t}
	func() {
		defer func() { recover() }()
		NeedCommand(r, "garuda-no-such-command", "nothing")
	}()
	if !r.failed {
		t.Error("a missing command did not fail the test")
	}
}

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(string, ...any) {
	r.failed = true
	panic("stop")
}
