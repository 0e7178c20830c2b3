//go:build !linux

package confine

// Self reports that this system has no confinement for the front end.
func Self() (string, error) {
	return "this system has no Landlock: the front end runs unconfined", nil
}
