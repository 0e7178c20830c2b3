//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// MaybeRunHelper does nothing outside Linux.
func MaybeRunHelper() {}

// Run refuses: sandboxed commands need Linux.
func Run(ctx context.Context, s Spec) (*Result, error) {
	return nil, fmt.Errorf("run %q: commands need Linux (namespaces, Landlock, seccomp), this is %s: %w",
		s.Command, runtime.GOOS, ErrUnavailable)
}

// Probe reports that nothing is enforced outside Linux.
func Probe() Report {
	return Report{Features: []Feature{{Name: "sandbox", Detail: "commands need Linux; this is " + runtime.GOOS}}}
}

// totalMemory is unknown outside Linux.
func totalMemory() int64 { return 0 }
