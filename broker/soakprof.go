//go:build soakprof

package broker

import "github.com/garuda-dev/garuda/bench/soakprof"

func init() { soakprof.Start("garuda-exec") }
