package broker

import "time"

// SetGuardEvery lets the tests of package broker_test check a running process's or server's leftovers sooner; it
// returns the function that restores the default.
func SetGuardEvery(d time.Duration) (restore func()) {
	guardEveryForTests.Store(int64(d))
	return func() { guardEveryForTests.Store(0) }
}
