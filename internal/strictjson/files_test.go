package strictjson_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/commands"
	"github.com/garuda-dev/garuda/broker/config"
	"github.com/garuda-dev/garuda/broker/undo"
	"github.com/garuda-dev/garuda/policy"
)

// A key given twice is refused in every kind of JSON file Garuda reads, naming the file, the line and the key: a
// reviewer reading the first value and the program taking the last must not disagree. Negative control: the same
// bytes are valid JSON that encoding/json (what trust.json and consents.json were read with) takes without a word.
func TestDuplicateKeyRefusedInEveryFile(t *testing.T) {
	home := t.TempDir()
	loadHome := func(file, data string) error {
		dir := filepath.Join(home, file)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(dir)
		return err
	}
	cases := []struct {
		file, data, key string
		read            func(data string) error
	}{
		{"settings.json", "{\"permissions\": {\"deny\": [\"Read(a)\"],\n\"deny\": []}}", "deny",
			func(d string) error { _, err := policy.ParseSettings("settings.json", []byte(d)); return err }},
		{"policy.json", "{\"allow_unsandboxed\": false,\n\"allow_unsandboxed\": true}", "allow_unsandboxed",
			func(d string) error { _, err := policy.ParsePolicy("policy.json", []byte(d)); return err }},
		{"settings.json", "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\",\n\"command\": \"a\", \"command\": \"b\"}]}]}}",
			"command", func(d string) error { _, err := policy.ParseSettings("settings.json", []byte(d)); return err }},
		{".claude/settings.json", "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\",\n\"command\": \"a\", \"command\": \"b\"}]}]}}",
			"command", func(d string) error {
				_, err := policy.ParseClaudeHooks(".claude/settings.json", []byte(d))
				return err
			}},
		{".claude/settings.json", "{\"model\": \"x\",\n\"model\": \"y\"}", "model", // Claude's own key, skipped but still strict
			func(d string) error {
				_, err := policy.ParseClaudeHooks(".claude/settings.json", []byte(d))
				return err
			}},
		{"models.json", "{\"default\": \"a\",\n\"default\": \"b\"}", "default",
			func(d string) error { return loadHome("models.json", d) }},
		{"credentials", "{\"anthropic\": \"sk-1\",\n\"anthropic\": \"sk-2\"}", "anthropic",
			func(d string) error { return loadHome("credentials", d) }},
		{".mcp.json", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n\"command\": \"y\"}}}", "command",
			func(d string) error {
				_, err := config.ParseMCP(".mcp.json", []byte(d), config.MCPSourceProject)
				return err
			}},
		{"trust.json", "{\"version\": 1, \"projects\": {\"/p\": \"sha256:1\",\n\"/p\": \"sha256:2\"}}", "/p",
			func(d string) error { _, err := policy.ParseTrust([]byte(d)); return err }},
		{"index.json", "[{\"id\": \"a\", \"path\": \"/p/a\",\n\"path\": \"/p/b\"}]", "path", // the undo index
			func(d string) error {
				dir := filepath.Join(home, "undo")
				if err := os.MkdirAll(filepath.Join(dir, "s1"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "s1", "index.json"), []byte(d), 0o600); err != nil {
					t.Fatal(err)
				}
				_, err := undo.Open(dir).List("s1")
				return err
			}},
		{"consents.json",
			"{\"version\": 1, \"consents\": [{\"kind\": \"command\", \"name\": \"x\", \"root\": \"/a\", \"hash\": \"h1\",\n\"hash\": \"h2\"}]}",
			"hash", func(d string) error { _, err := commands.ParseConsents([]byte(d)); return err }},
	}
	for _, c := range cases {
		var v any
		if err := json.Unmarshal([]byte(c.data), &v); err != nil {
			t.Fatalf("%s: negative control: encoding/json refused %q: %v", c.file, c.data, err)
		}
		err := c.read(c.data)
		want := `line 2: duplicate key "` + c.key + `"`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.file) {
			t.Errorf("%s with %q twice: error %v, want it to name the file and say %q", c.file, c.key, err, want)
		}
	}
}
