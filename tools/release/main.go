// Command release builds a Garuda release into dist/: reproducible static archives for the five platforms of the ACP
// Registry, their SHA256SUMS, and the registry entry (registry/garuda/agent.json and icon.svg), checked against the
// registry's rules before anything is put in place. `make release VERSION=x.y.z` runs it from the module's root.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := Main(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}
