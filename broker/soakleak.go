//go:build soakleak

package broker

// leaked holds the goroutines of `make soak LEAK=1` for ever: one per call, the deliberate leak that shows the
// soak's goroutine bound catches a broker that keeps what it should end. Never in a shipped build.
var leaked = make(chan struct{})

func callEnded() { go func() { <-leaked }() }
