//go:build soakprof

package acpagent

import "github.com/garuda-dev/garuda/bench/soakprof"

func init() { soakprof.Start("garuda") }
