//go:build race

package sandbox

// helperEnv is the helper's environment in a -race build (tests only): the race runtime would sleep a second at
// every helper's exit, a second longer for every sandboxed command of the test suite.
var helperEnv = []string{"GORACE=atexit_sleep_ms=0"}
