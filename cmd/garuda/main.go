// Command garuda is Garuda's front end: the agent that editors run over the Agent Client Protocol.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/garuda-dev/garuda/frontend/cli"
)

func main() {
	if err := cli.Main(context.Background(), os.Args[1:]); err != nil {
		if !cli.Reported(err) {
			fmt.Fprintln(os.Stderr, "garuda:", err)
		}
		os.Exit(cli.ExitCode(err))
	}
}
