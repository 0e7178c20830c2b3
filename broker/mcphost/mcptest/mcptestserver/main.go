// Command mcptestserver is mcptest's server on stdio as a binary of its own, for benchmarks: its start is what a
// small real server's start would be, not a test binary's (which initialises every package the tests link).
// Usage: mcptestserver MODE.
package main

import (
	"os"

	"github.com/garuda-dev/garuda/broker/mcphost/mcptest"
)

func main() {
	if len(os.Args) != 2 {
		os.Stderr.WriteString("usage: mcptestserver MODE\n")
		os.Exit(2)
	}
	os.Exit(mcptest.Serve(os.Args[1]))
}
