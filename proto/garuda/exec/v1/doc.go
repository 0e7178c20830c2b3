// Package execv1 is the generated Go of the broker API, garuda.exec.v1 (exec.proto beside it): the one door
// between the powerless front end and the broker. Regenerate with `make generate`.
package execv1

import "time"

// CancelGrace is how long the broker lets a cancelled command's processes end after SIGTERM before it kills its
// whole process tree with SIGKILL; the cancelled Result follows at once. A front end that waits for that Result
// waits a little longer than this.
const CancelGrace = 2 * time.Second
