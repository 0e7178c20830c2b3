// Package execv1 is the generated Go of the broker API, garuda.exec.v1 (exec.proto beside it): the one door
// between the powerless front end and the broker. Regenerate with `make generate`.
package execv1
