// Package cli is the garuda command: `garuda acp` for editors, and the subcommands that set Garuda up and inspect
// it. Every one of them reaches files only through the broker it starts.
package cli
