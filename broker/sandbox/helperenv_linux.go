//go:build !race

package sandbox

// helperEnv is the helper's environment: empty, so that nothing of the broker's (provider keys) reaches it.
var helperEnv = []string{}
