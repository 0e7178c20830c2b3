//go:build linux

// Command garuda is Garuda's front end: the agent that editors run over the Agent Client Protocol.
package main

import (
	"context"
	"os"

	"github.com/garuda-dev/garuda/frontend/cli"
)

func main() {
	os.Exit(cli.Report(os.Stderr, cli.Main(context.Background(), os.Args[1:])))
}
