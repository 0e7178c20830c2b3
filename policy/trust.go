package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/garuda-dev/garuda/internal/strictjson"
)

// Trust is the content of $GARUDA_HOME/trust.json: for each project folder, the hash of the project settings
// file the user approved with `garuda trust`. A project's loosening entries apply only while the file's current
// hash is the pinned one, so an edit of the file (by the model, a pull, anyone) needs a new approval.
type Trust struct {
	Version  int               `json:"version"`
	Projects map[string]string `json:"projects"`
}

// TrustHash returns the hash that pins a project settings file: "sha256:" and the hex digest of its bytes.
func TrustHash(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseTrust parses trust.json. Empty data is an empty Trust (no project trusted).
func ParseTrust(data []byte) (*Trust, error) {
	t := &Trust{Version: 1, Projects: map[string]string{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return t, nil
	}
	if err := strictjson.Unmarshal("trust.json", data, t); err != nil {
		return nil, fmt.Errorf("parse %w", err)
	}
	if t.Version != 1 {
		return nil, fmt.Errorf("parse trust.json: unsupported version %d", t.Version)
	}
	if t.Projects == nil {
		t.Projects = map[string]string{}
	}
	return t, nil
}

// Pinned reports whether hash is the pinned hash of dir (an absolute folder).
func (t *Trust) Pinned(dir, hash string) bool {
	if t == nil || hash == "" {
		return false
	}
	got, ok := t.Projects[filepath.Clean(dir)]
	return ok && got == hash
}

// Pin records hash as the approved project settings of dir, replacing any earlier pin.
func (t *Trust) Pin(dir, hash string) {
	if t.Projects == nil {
		t.Projects = map[string]string{}
	}
	t.Version = 1
	t.Projects[filepath.Clean(dir)] = hash
}

// Marshal returns trust.json's bytes (stable: keys sorted, indented, ending in a newline).
func (t *Trust) Marshal() []byte {
	if t.Projects == nil {
		t.Projects = map[string]string{}
	}
	t.Version = 1
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil { // cannot happen for a map of strings
		panic(fmt.Sprintf("marshal trust.json: %v", err))
	}
	return append(b, '\n')
}
