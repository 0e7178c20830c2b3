package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/broker/sandbox"
)

// A cached probe is used only for the same key, from a private folder of this user.
func TestCachedProbe(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	os.MkdirAll(workBase(), 0o700)
	path := filepath.Join(workBase(), "probe.json")
	want := sandbox.Report{Features: []sandbox.Feature{{Name: "landlock", Enforced: true, Detail: "ABI 7"}}}
	data, _ := json.Marshal(probeCache{Key: "k1", Report: want})
	os.WriteFile(path, data, 0o600)
	if r, ok := cachedProbe(path, "k1"); !ok || r.Features[0].Detail != "ABI 7" {
		t.Fatalf("the cache was not used: %v %v", r, ok)
	}
	if _, ok := cachedProbe(path, "k2"); ok {
		t.Fatal("a cache of another boot or binary was used")
	}
	// A folder others may enter is not trusted.
	os.Chmod(workBase(), 0o755)
	if _, ok := cachedProbe(path, "k1"); ok {
		t.Fatal("a cache in a folder others may enter was used")
	}
	if probeKey() == "" {
		t.Fatal("no key on Linux")
	}
}
