// The progress pump: a command's output streamed to the front end a few times a second at most.

package broker

import (
	"github.com/garuda-dev/garuda/internal/throttle"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// newProgress streams command output to the front end: at most every throttle.Every, each message the newest
// throttle.MaxTail bytes of what came since the last one (the rest is in the result and the output file). Its Add
// is the sandbox's OnOutput and never waits for the front end; End sends what is left.
func newProgress(c *call) *throttle.Throttle {
	return throttle.New(func(b []byte) { c.progress(&execv1.Progress{Output: b}) }, throttle.Config{Delta: true, Background: true})
}
