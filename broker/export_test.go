package broker

import "time"

// SetGuardEvery lets the tests of package broker_test check a running process's or server's leftovers sooner; it
// returns the function that restores the default.
func SetGuardEvery(d time.Duration) (restore func()) {
	guardEveryForTests.Store(int64(d))
	return func() { guardEveryForTests.Store(0) }
}

// SetGuardDeaf makes the running processes' and servers' checks wait for their interval, not a change of the root's
// entries (a control's way to show the check at a change is what undid a plant); it returns the restore.
func SetGuardDeaf() (restore func()) {
	guardDeafForTests.Store(true)
	return func() { guardDeafForTests.Store(false) }
}
