//go:build linux

// Command garuda-sandbox is the sandbox's helper: garuda-exec runs it, from beside its own executable, as each
// command's pid 1, as a session network's holder and as its probe. It links the sandbox and little else, so that
// each start is quick.
package main

import (
	"os"

	"github.com/garuda-dev/garuda/broker/sandbox"
)

func main() { os.Exit(sandbox.HelperMain(os.Args[1:], os.Stdout, os.Stderr)) }
