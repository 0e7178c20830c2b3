package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/garuda-dev/garuda/internal/strictjson"
)

// Kinds of consent. Later kinds (network-allowlist additions, MCP servers) use the same Consents.
const (
	ConsentCommand   = "command"
	ConsentSkill     = "skill"
	ConsentHook      = "hook"       // a project's hooks, pinned by the hash of their definitions
	ConsentMCPServer = "mcp_server" // a project's or the editor's MCP server, pinned to its definition's hash
)

// Consent is one yes of the user: this kind of thing, with this name, in this project folder, with exactly
// this content hash.
type Consent struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Root string `json:"root"`
	Hash string `json:"hash"`
}

// Consents is the content of the user's consent file (e.g. $GARUDA_HOME/consents.json). A consent is pinned
// to the content's hash, so a file changed after the yes (by the model, a pull, anyone) needs a new yes.
type Consents struct {
	Version  int       `json:"version"`
	Consents []Consent `json:"consents"`
}

// ParseConsents parses the consent file. Empty data is no consent at all.
func ParseConsents(data []byte) (*Consents, error) {
	c := &Consents{Version: 1}
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	if err := strictjson.Unmarshal("consents.json", data, c); err != nil {
		return nil, fmt.Errorf("parse consents: %w", err)
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("parse consents: unsupported version %d", c.Version)
	}
	for i, e := range c.Consents {
		if e.Kind == "" || e.Name == "" || e.Hash == "" {
			return nil, fmt.Errorf("parse consents: entry %d: kind, name and hash are required", i+1)
		}
	}
	return c, nil
}

func cleanRoot(root string) string {
	if root == "" {
		return ""
	}
	return filepath.Clean(root)
}

// Granted reports whether the user said yes to exactly this kind, name, root and content hash. An empty hash
// is never granted, which defends against a caller that forgot to hash.
func (c *Consents) Granted(kind, name, root, hash string) bool {
	if c == nil || hash == "" {
		return false
	}
	root = cleanRoot(root)
	for _, e := range c.Consents {
		if e.Kind == kind && e.Name == name && e.Root == root {
			return e.Hash == hash
		}
	}
	return false
}

// Grant records a yes, replacing an earlier one for the same kind, name and root (the old content's consent
// is gone: going back to it asks again).
func (c *Consents) Grant(kind, name, root, hash string) {
	root = cleanRoot(root)
	for i, e := range c.Consents {
		if e.Kind == kind && e.Name == name && e.Root == root {
			c.Consents[i].Hash = hash
			return
		}
	}
	c.Consents = append(c.Consents, Consent{Kind: kind, Name: name, Root: root, Hash: hash})
}

// Marshal returns the consent file's bytes: stable (sorted by root, kind, name), indented, ending in a newline.
func (c *Consents) Marshal() []byte {
	c.Version = 1
	if c.Consents == nil {
		c.Consents = []Consent{}
	}
	slices.SortFunc(c.Consents, func(a, b Consent) int {
		if r := strings.Compare(a.Root, b.Root); r != 0 {
			return r
		}
		if r := strings.Compare(a.Kind, b.Kind); r != 0 {
			return r
		}
		return strings.Compare(a.Name, b.Name)
	})
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil { // cannot happen for strings
		panic(fmt.Sprintf("marshal consents: %v", err))
	}
	return append(b, '\n')
}

// NeedsConsent reports whether using cmd needs the user's yes: a project's own command or skill does (it comes
// with the repository, not from the user); the user's own from $GARUDA_HOME does not.
func NeedsConsent(cmd *Command) bool {
	return cmd != nil && cmd.Source != SourceUser
}

// ConsentKind is the kind under which cmd's consent is kept: ConsentAgent, ConsentSkill or ConsentCommand.
func ConsentKind(cmd *Command) string {
	if cmd.Agent {
		return ConsentAgent
	}
	if cmd.Skill {
		return ConsentSkill
	}
	return ConsentCommand
}
