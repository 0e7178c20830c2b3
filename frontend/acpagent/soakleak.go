//go:build soakleak

package acpagent

import (
	"encoding/json"
	"sync"
	"syscall"

	"github.com/garuda-dev/garuda/frontend/model"
)

// kept is every turn's history, never freed, and a duplicate of stdin for each turn, never closed: the deliberate
// leaks of `make soak LEAK=1`, which show that the soak's bounds catch a front end that keeps memory or descriptors
// it should let go. Never in a shipped build.
var kept struct {
	mu    sync.Mutex
	turns [][]byte
}

func turnEnded(h []model.Message) {
	b, _ := json.Marshal(h)
	kept.mu.Lock()
	kept.turns = append(kept.turns, b)
	kept.mu.Unlock()
	_, _ = syscall.Dup(0)
}
