//go:build soakleak

package acpagent

import (
	"encoding/json"
	"sync"

	"github.com/garuda-dev/garuda/frontend/model"
)

// kept is every turn's history, never freed: the deliberate leak of `make soak LEAK=1`, which shows that the
// soak's bounds catch a front end that keeps what it should let go. Never in a shipped build.
var kept struct {
	mu    sync.Mutex
	turns [][]byte
}

func turnEnded(h []model.Message) {
	b, _ := json.Marshal(h)
	kept.mu.Lock()
	kept.turns = append(kept.turns, b)
	kept.mu.Unlock()
}
