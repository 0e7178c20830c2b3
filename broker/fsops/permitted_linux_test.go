package fsops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/garuda-dev/garuda/broker/permit"
	"github.com/garuda-dev/garuda/policy"
)

func decide(t *testing.T, root string, kind policy.Kind, tool, path string) permit.Permit {
	t.Helper()
	_, p := permit.Decide(policy.Request{Kind: kind, Tool: tool, Path: path}, &policy.State{Root: root, Mode: policy.ModeBuild})
	return p
}

// The exported operations open only what their permit covers: without one (a deny), or with an unanswered ask
// whose target may not be previewed, nothing is opened — a FIFO target would say so ("not a regular file").
func TestOperationsNeedTheirPermit(t *testing.T) {
	r, root, outside := fixture(t)
	writeFile(t, filepath.Join(root, "a.txt"), "old\n")
	fifo := filepath.Join(outside, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var zero permit.Permit
	if _, err := r.Read(ctx, zero, ReadRequest{}); !errors.Is(err, permit.ErrNotPermitted) {
		t.Errorf("Read without a permit: %v", err)
	}
	if _, err := r.Glob(ctx, zero, "*", nil); !errors.Is(err, permit.ErrNotPermitted) {
		t.Errorf("Glob without a permit: %v", err)
	}
	if _, err := r.Grep(ctx, zero, GrepRequest{Pattern: "x"}, nil); !errors.Is(err, permit.ErrNotPermitted) {
		t.Errorf("Grep without a permit: %v", err)
	}
	// Outside the root an edit asks without a preview: the FIFO is not opened before the answer.
	ask := decide(t, root, policy.KindEdit, policy.OpEditFile, fifo)
	if _, err := r.PrepareEdit(ask, "a", "b", false); !errors.Is(err, permit.ErrNotPermitted) {
		t.Errorf("PrepareEdit of an outside FIFO before the answer: %v", err)
	}
	if _, err := r.PrepareEdit(permit.Granted(ask), "a", "b", false); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("control: after the answer the FIFO is opened and refused: %v", err)
	}
	// In the root an edit previews: it is prepared before the answer, and committed only after it.
	edit := decide(t, root, policy.KindEdit, policy.OpEditFile, filepath.Join(root, "a.txt"))
	pend, err := r.PrepareEdit(edit, "old", "new", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(edit, pend, nil); !errors.Is(err, permit.ErrNotPermitted) {
		t.Errorf("Commit before the answer: %v", err)
	}
	other := permit.Granted(decide(t, root, policy.KindEdit, policy.OpEditFile, filepath.Join(root, "b.txt")))
	if err := r.Commit(other, pend, nil); !errors.Is(err, permit.ErrNotPermitted) {
		t.Errorf("Commit with another file's permit: %v", err)
	}
	if err := r.Commit(permit.Granted(edit), pend, nil); err != nil {
		t.Fatalf("Commit after the answer: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "new\n" {
		t.Fatalf("a.txt = %q", b)
	}
}

// A search does not enter a folder the read policy hides, nor read a .gitignore it hides: nothing of the walk
// depends on them. Control: with the folder allowed, its files are asked about.
func TestSearchesDoNotEnterHiddenFolders(t *testing.T) {
	r, root, _ := fixture(t)
	tree(t, root, [][2]string{
		{"secret/a.txt", "needle\n"},
		{"secret/deep/b.txt", "needle\n"},
		{"secret/.gitignore", "*.txt\n"},
		{"open/.gitignore", "ignored.txt\n"},
		{"open/c.txt", "needle\n"},
	})
	for _, hide := range []bool{true, false} {
		var mu sync.Mutex
		var asked []string
		allow := func(abs string) bool {
			mu.Lock()
			asked = append(asked, abs)
			mu.Unlock()
			rel, _ := filepath.Rel(root, abs)
			return !hide || (rel != "secret" && !strings.HasPrefix(rel, "secret/")) && rel != "open/.gitignore"
		}
		res, err := r.grep(context.Background(), GrepRequest{Pattern: "needle"}, allow)
		if err != nil {
			t.Fatal(err)
		}
		inside := 0
		for _, a := range asked {
			if strings.HasPrefix(a, filepath.Join(root, "secret")+"/") {
				inside++
			}
		}
		switch {
		case hide && (inside > 0 || res.Text != "open/c.txt\n"):
			t.Errorf("with secret/ hidden, the walk asked about %d paths in it; result %q", inside, res.Text)
		case !hide && inside == 0:
			t.Errorf("control: with secret/ allowed, nothing in it was asked about")
		}
	}
}
