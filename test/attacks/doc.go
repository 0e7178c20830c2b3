// Package attacks drives a real broker as a hostile front end would: forged answers, other clients' sessions,
// paths that try to leave the root, answers after a cancel. Each attack has a negative control that shows the
// same request succeeds where it is legitimate, so a passing attack test is not a test that cannot fail.
//
// The files are named for what their attacks aim at (roots_test.go: what a session's root can be; search_test.go:
// glob and grep; commands_test.go: what a sandboxed command reaches or leaves). A test tagged "Found by red team"
// comes from one of the red-team passes over the boundary: "FOUND AND FIXED" ones failed before their fix (the
// comment says what broke and why); "HELD" ones add coverage of attacks the protections already stopped. What the
// broker does for an honest front end is tested in broker/ itself, on the same harness (broker/brokertest).
package attacks
