//go:build linux

// Command garuda-exec is Garuda's broker: the only process that touches the project or runs commands.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/garuda-dev/garuda/broker"
	"github.com/garuda-dev/garuda/broker/sandbox"
)

func main() {
	sandbox.MaybeRunHelper()
	if err := broker.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "garuda-exec:", err)
		os.Exit(1)
	}
}
