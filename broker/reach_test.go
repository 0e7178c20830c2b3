package broker

import (
	"errors"
	"os"
	"testing"

	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/broker/peercred"
)

// A broker serving other users opens only their own folders.
func TestCheckReach(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown a folder to another uid")
	}
	dir := t.TempDir()
	root, err := fsops.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	other := peercred.Peer{UID: 65534}
	if err := checkReach(other, root); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("uid 65534 reached a folder of root: %v", err)
	}
	// Negative controls: the folder's owner, and the broker's own user, are served.
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := checkReach(other, root); err != nil {
		t.Fatalf("the owner was refused: %v", err)
	}
	if err := checkReach(peercred.Peer{UID: uint32(os.Getuid())}, root); err != nil {
		t.Fatalf("the broker's own uid was refused: %v", err)
	}
}
