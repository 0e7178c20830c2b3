//go:build !soakleak

package broker

// callEnded runs at the end of every Call. It does nothing: a build with the soakleak tag leaks a goroutine there
// instead (soakleak.go), the leak that make soak must catch.
func callEnded() {}
