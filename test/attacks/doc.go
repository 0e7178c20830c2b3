// Package attacks drives a real broker as a hostile front end would: forged answers, other clients' sessions,
// paths that try to leave the root, answers after a cancel. Each attack has a negative control that shows the
// same request succeeds where it is legitimate, so a passing attack test is not a test that cannot fail.
package attacks
