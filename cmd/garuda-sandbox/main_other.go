//go:build !linux

package main

import (
	"os"

	"github.com/garuda-dev/garuda/internal/version"
)

func main() { os.Exit(version.Unsupported("garuda-sandbox", os.Args[1:], os.Stdout, os.Stderr)) }
