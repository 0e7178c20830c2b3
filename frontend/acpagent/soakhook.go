//go:build !soakleak

package acpagent

import "github.com/garuda-dev/garuda/frontend/model"

// turnEnded sees a session's history after each turn. It does nothing: a build with the soakleak tag keeps every
// turn's history instead (soakleak.go), the leak that make soak must catch.
func turnEnded([]model.Message) {}
