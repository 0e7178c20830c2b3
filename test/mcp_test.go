package test

import (
	"strings"
	"testing"
)

// The MCP SDK is the broker's alone: garuda does not link it, so that spawn → initialize stays as light as it was.
func TestFrontEndHasNoMCPSDK(t *testing.T) {
	deps := goList(t, "-deps", "./cmd/garuda")
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/modelcontextprotocol/") {
			t.Errorf("garuda links %s; MCP belongs in the broker", d)
		}
	}
	if len(deps) < 10 {
		t.Fatalf("go list found %d packages; the check checks nothing", len(deps))
	}
}
