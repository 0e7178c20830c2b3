package config

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode passes through the umask
		t.Fatal(err)
	}
}

func envOf(names ...string) func(string) bool {
	return func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
}

func load(t *testing.T, home string) *Config {
	t.Helper()
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNoModelIsAuthRequired(t *testing.T) {
	c := load(t, t.TempDir())
	_, err := c.Resolve("", envOf("ANTHROPIC_API_KEY"))
	if !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "Garuda has no model") ||
		!strings.Contains(err.Error(), "garuda setup") {
		t.Errorf("err = %v", err)
	}
}

func TestAKeyAndAModelNameAreEnough(t *testing.T) {
	c := load(t, t.TempDir())
	r, err := c.Resolve("claude-sonnet-4-5", envOf("ANTHROPIC_API_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	want := Resolved{Name: "claude-sonnet-4-5", Provider: "anthropic", Type: TypeAnthropic, ModelID: "claude-sonnet-4-5",
		ContextWindow: 200000, MaxOutputTokens: 64000, Reasoning: ReasoningOptional, APIKeyEnv: "ANTHROPIC_API_KEY", KeySource: KeyFromEnv}
	if *r != want {
		t.Errorf("resolved %+v\nwant     %+v", *r, want)
	}
	r, err = c.Resolve("gpt-5", envOf("OPENAI_API_KEY"))
	if err != nil || r.Type != TypeOpenAI || r.APIKeyEnv != "OPENAI_API_KEY" {
		t.Errorf("gpt-5: %+v %v", r, err)
	}
}

func TestProviderWithoutKeyIsAuthRequired(t *testing.T) {
	c := load(t, t.TempDir())
	_, err := c.Resolve("gpt-5", envOf("ANTHROPIC_API_KEY"))
	if !errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "garuda setup") {
		t.Errorf("err = %v", err)
	}
}

func TestUnknownModelIsAPlainErrorWithCloseNames(t *testing.T) {
	c := load(t, t.TempDir())
	_, err := c.Resolve("claude-sonet-4-5", envOf("ANTHROPIC_API_KEY"))
	if err == nil || errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), `"claude-sonet-4-5"`) ||
		!strings.Contains(err.Error(), "claude-sonnet-4-5") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(err.Error(), "gpt-4.1-mini") {
		t.Errorf("far names listed: %v", err)
	}
	_, err = c.Resolve("gemini/gemini-3-pro", envOf())
	if err == nil || errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), `provider "gemini" is not known`) {
		t.Errorf("unknown provider: %v", err)
	}
}

const richModels = `{
  "default": "gpt-5",
  "providers": {
    "anthropic": {"base_url": "https://proxy.example/anthropic"},
    "openrouter": {"type": "openai", "base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY"},
    "ollama": {"type": "openai", "base_url": "http://127.0.0.1:11434/v1"}
  },
  "models": {
    "claude-sonnet-4-5": {"context_window": 1000000},
    "qwen": {"provider": "openrouter", "id": "qwen/qwen3-coder"},
    "llama": {"provider": "ollama", "id": "llama3.1:8b", "context_window": 32768, "max_output_tokens": 4096}
  }
}
`

func TestPrecedence(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ModelsFile), richModels, 0o644)
	writeFile(t, filepath.Join(home, CredentialsFile),
		`{"openai": "sk-openai-cred", "anthropic": "sk-ant-cred", "openrouter": "sk-or-cred"}`, 0o600)
	c := load(t, home)

	tests := []struct {
		name, override string
		env            []string
		want           Resolved
	}{
		{"the default, key from credentials", "", nil,
			Resolved{
				Name: "gpt-5", Provider: "openai", Type: TypeOpenAI, ModelID: "gpt-5", ContextWindow: 400000, MaxOutputTokens: 128000,
				Reasoning: ReasoningAlways, APIKeyEnv: "OPENAI_API_KEY", APIKey: "sk-openai-cred", KeySource: KeyFromCredentials,
			}},
		{"the environment's key beats the credentials", "", []string{"OPENAI_API_KEY"},
			Resolved{
				Name: "gpt-5", Provider: "openai", Type: TypeOpenAI, ModelID: "gpt-5", ContextWindow: 400000, MaxOutputTokens: 128000,
				Reasoning: ReasoningAlways, APIKeyEnv: "OPENAI_API_KEY", KeySource: KeyFromEnv,
			}},
		{"the override beats the default; models.json changes one field of a catalog model and the base URL of a built-in provider",
			"claude-sonnet-4-5", nil,
			Resolved{
				Name: "claude-sonnet-4-5", Provider: "anthropic", Type: TypeAnthropic, BaseURL: "https://proxy.example/anthropic",
				ModelID: "claude-sonnet-4-5", ContextWindow: 1000000, MaxOutputTokens: 64000, Reasoning: ReasoningOptional,
				APIKeyEnv: "ANTHROPIC_API_KEY", APIKey: "sk-ant-cred", KeySource: KeyFromCredentials,
			}},
		{"a provider's own key variable", "qwen", []string{"OPENROUTER_API_KEY"},
			Resolved{
				Name: "qwen", Provider: "openrouter", Type: TypeOpenAI, BaseURL: "https://openrouter.ai/api/v1", ModelID: "qwen/qwen3-coder",
				ContextWindow: DefaultContextWindow, MaxOutputTokens: DefaultMaxOutputTokens, APIKeyEnv: "OPENROUTER_API_KEY", KeySource: KeyFromEnv,
			}},
		{"a local provider takes no key", "llama", nil,
			Resolved{
				Name: "llama", Provider: "ollama", Type: TypeOpenAI, BaseURL: "http://127.0.0.1:11434/v1", ModelID: "llama3.1:8b",
				ContextWindow: 32768, MaxOutputTokens: 4096, KeySource: KeyNone,
			}},
		{"provider/model-id with an id the catalog knows", "anthropic/claude-opus-4-5", []string{"ANTHROPIC_API_KEY"},
			Resolved{
				Name: "anthropic/claude-opus-4-5", Provider: "anthropic", Type: TypeAnthropic, BaseURL: "https://proxy.example/anthropic",
				ModelID: "claude-opus-4-5", ContextWindow: 200000, MaxOutputTokens: 64000, Reasoning: ReasoningOptional,
				APIKeyEnv: "ANTHROPIC_API_KEY", KeySource: KeyFromEnv,
			}},
		{"provider/model-id with a slash in the id", "openrouter/anthropic/claude-x", nil,
			Resolved{
				Name: "openrouter/anthropic/claude-x", Provider: "openrouter", Type: TypeOpenAI, BaseURL: "https://openrouter.ai/api/v1",
				ModelID: "anthropic/claude-x", ContextWindow: DefaultContextWindow, MaxOutputTokens: DefaultMaxOutputTokens,
				APIKeyEnv: "OPENROUTER_API_KEY", APIKey: "sk-or-cred", KeySource: KeyFromCredentials,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := c.Resolve(tt.override, envOf(tt.env...))
			if err != nil {
				t.Fatal(err)
			}
			if *r != tt.want {
				t.Errorf("resolved %+v\nwant     %+v", *r, tt.want)
			}
		})
	}
}

func TestMalformedModelsJSON(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"syntax", "{\n  \"default\": \"gpt-5\",\n  \"models\": {,}\n}", `line 3: invalid JSON`},
		{"ends early", "{\n  \"default\": \"gpt-5\",\n", `line 3: invalid JSON: the file ends too early`},
		{"unknown top key", "{\n  \"defualt\": \"gpt-5\"\n}", `line 2: unknown key "defualt"`},
		{"unknown provider key", "{\"providers\": {\n \"x\": {\"type\": \"openai\",\n  \"api_key\": \"k\"}}}", `line 3: provider "x": unknown key "api_key"`},
		{"unknown model key", "{\"models\": {\n\"m\": {\"provider\": \"openai\", \"window\": 5}}}", `line 2: model "m": unknown key "window"`},
		{"type error", "{\n\"models\": {\n  \"m\": {\"provider\": \"openai\",\n     \"context_window\": \"big\"}}}", `line 4: model "m" "context_window": want a number, got a string`},
		{"not a whole number", "{\"models\": {\"m\": {\"provider\": \"openai\", \"max_output_tokens\": -3}}}", `line 1: model "m" "max_output_tokens": want a whole number above 0, got -3`},
		{"default not a string", "{\n\n\"default\": [\"a\"]}", `line 3: "default": want a string, got a list`},
		{"providers not an object", "{\"providers\": [1]}", `"providers": want an object, got a list`},
		{"unknown provider type", "{\"providers\": {\n\"g\": {\n\"type\": \"gemini\"}}}", `line 3: provider "g": type "gemini" is not known`},
		{"provider without type", "{\"providers\": {\n\"g\": {\"base_url\": \"http://x\"}}}", `line 2: provider "g": no "type"`},
		{"bad base_url", "{\"providers\": {\"g\": {\"type\": \"openai\",\n\"base_url\": \"ftp://x\"}}}", `line 2: provider "g": base_url "ftp://x" must start with http:// or https://`},
		{"model with unknown provider", "{\"models\": {\n\"m\": {\n\"provider\": \"nope\"}}}", `line 3: model "m": provider "nope" is not known`},
		{"model without provider", "{\"models\": {\n\n\"m\": {\"id\": \"x\"}}}", `line 3: model "m": no "provider"`},
		{"duplicate key", "{\"default\": \"a\",\n\"default\": \"b\"}", `line 2: duplicate key "default"`},
		{"trailing text", "{\"default\": \"a\"}\n{}", `line 2: invalid JSON: more text after the end`},
		{"not an object", "[]", `the file: want an object, got a list`},
		{"unknown limit", "{\"limits\": {\n\"steps\": 5}}", `line 2: limits: unknown key "steps"`},
		{"bad limit", "{\"limits\": {\"max_steps\": 0}}", `"limits" "max_steps": want a whole number above 0, got 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			path := filepath.Join(home, ModelsFile)
			writeFile(t, path, tt.content, 0o644)
			_, err := Load(home)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant %s: ...%s", err, path, tt.want)
			}
			if errors.Is(err, ErrAuthRequired) {
				t.Errorf("a malformed file is not auth required: %v", err)
			}
		})
	}
}

// A models.json that is not a file to read is said once, naming it: "PATH is a folder, not a regular file: replace it
// with a regular file", not "read PATH: PATH is a folder, …: not a regular file".
func TestModelsJSONNotAFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ModelsFile)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load(home)
	want := path + " is a folder, not a regular file: replace it with a regular file"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestDefaultNamingAnUnknownModel(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ModelsFile), "{\n  \"default\": \"gtp-5\"\n}", 0o644)
	c := load(t, home)
	_, err := c.Resolve("", envOf("OPENAI_API_KEY"))
	if err == nil || errors.Is(err, ErrAuthRequired) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "gpt-5") {
		t.Errorf("err = %v", err)
	}
	// An override does not need the default.
	if _, err := c.Resolve("gpt-5", envOf("OPENAI_API_KEY")); err != nil {
		t.Errorf("override: %v", err)
	}
}

func TestCredentialsReadableByOthersAreRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620} {
		home := t.TempDir()
		path := filepath.Join(home, CredentialsFile)
		writeFile(t, path, `{"anthropic": "sk-ant-secret"}`, mode)
		_, err := Load(home)
		if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %o: err = %v", mode, err)
		}
		if err != nil && strings.Contains(err.Error(), "sk-ant-secret") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	home := t.TempDir()
	writeFile(t, filepath.Join(home, CredentialsFile), `{"anthropic": "sk-ant-secret"}`, 0o600)
	r, err := load(t, home).Resolve("claude-haiku-4-5", envOf())
	if err != nil || r.APIKey != "sk-ant-secret" || r.KeySource != KeyFromCredentials {
		t.Errorf("0600: %+v %v", r, err)
	}
}

// Negative control for the mode check: a group- or world-readable credentials file really is
// readable by another user of the machine (here nobody), which is what the refusal prevents.
func TestCredentialsModeNegativeControl(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to nobody")
	}
	runuser := testenv.NeedCommand(t, "runuser", "util-linux")
	home := t.TempDir()
	for _, d := range []string{filepath.Dir(home), home} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(home, CredentialsFile)
	writeFile(t, path, `{"anthropic": "sk-ant-secret"}`, 0o644)
	out, err := exec.Command(runuser, "-u", "nobody", "--", "cat", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sk-ant-secret") {
		t.Fatalf("nobody could not read a 0644 file (%v: %s): the control shows nothing", err, out)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(runuser, "-u", "nobody", "--", "cat", path).CombinedOutput(); err == nil {
		t.Errorf("nobody read a 0600 file: %s", out)
	}
}

func TestMalformedCredentials(t *testing.T) {
	tests := []struct{ content, want string }{
		{"{\n\"anthropic\": 5}", `line 2: the key of "anthropic": want a string, got a number`},
		{"{\"anthropic\": \"sk-ant-secret\"\n \"openai\": \"x\"}", `line 2: invalid JSON`},
		{"[\"sk-ant-secret\"]", `the file: want an object, got a list`},
	}
	for _, tt := range tests {
		home := t.TempDir()
		path := filepath.Join(home, CredentialsFile)
		writeFile(t, path, tt.content, 0o600)
		_, err := Load(home)
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %s", tt.content, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-ant-secret") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
}

func TestWriteSetup(t *testing.T) {
	home := filepath.Join(t.TempDir(), "garuda-home")
	if err := WriteSetup(home, "anthropic", "claude-sonnet-4-5", "  sk-ant-new\n", false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(home)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("home: %v %v", st.Mode(), err)
	}
	st, err = os.Stat(filepath.Join(home, CredentialsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("credentials: %v %v", st.Mode(), err)
	}
	// A session right after setup works, with no environment.
	r, err := load(t, home).Resolve("", envOf())
	if err != nil || r.Name != "claude-sonnet-4-5" || r.APIKey != "sk-ant-new" || r.KeySource != KeyFromCredentials {
		t.Fatalf("after setup: %+v %v", r, err)
	}

	// A second setup for another provider keeps the first key and the rest of models.json.
	writeFile(t, filepath.Join(home, ModelsFile), richModels, 0o644)
	if err := WriteSetup(home, "openrouter", "mistral/devstral", "sk-or-new", true); err != nil {
		t.Fatal(err)
	}
	c := load(t, home)
	if c.credentials["anthropic"] != "sk-ant-new" || c.credentials["openrouter"] != "sk-or-new" {
		t.Errorf("credentials after merge: %d keys", len(c.credentials))
	}
	r, err = c.Resolve("", envOf())
	if err != nil || r.Provider != "openrouter" || r.ModelID != "mistral/devstral" || r.BaseURL != "https://openrouter.ai/api/v1" {
		t.Errorf("default after the second setup: %+v %v", r, err)
	}
	if _, err := c.Resolve("llama", envOf()); err != nil {
		t.Errorf("models.json lost its models: %v", err)
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 2 {
		t.Errorf("files left in home: %v", entries)
	}
}

func TestWriteSetupRefusesBadInputAndKeepsFiles(t *testing.T) {
	home := t.TempDir()
	// An id Garuda does not know for a provider that lists models: refused with the close names, stored with force.
	err := WriteSetup(home, "anthropic", "claude-sonet-4-5", "k", false)
	if err == nil || !strings.Contains(err.Error(), `anthropic has no model "claude-sonet-4-5" that Garuda knows; did you mean claude-sonnet-4-5`) ||
		!strings.Contains(err.Error(), "--force") {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ModelsFile)); err == nil {
		t.Errorf("setup stored a refused model")
	}
	if err := WriteSetup(home, "anthropic", "claude-sonnet-9", "k", true); err != nil {
		t.Errorf("unknown id with force: %v", err)
	}
	if r, err := load(t, home).Resolve("", envOf()); err != nil || r.ModelID != "claude-sonnet-9" {
		t.Errorf("after a forced setup: %+v %v", r, err)
	}
	home = t.TempDir()
	if err := WriteSetup(home, "gemini", "x", "k", false); err == nil || !strings.Contains(err.Error(), `provider "gemini" is not known`) {
		t.Errorf("unknown provider: %v", err)
	}
	if err := WriteSetup(home, "openai", "claude-sonnet-4-5", "k", false); err == nil || !strings.Contains(err.Error(), `belongs to provider "anthropic"`) {
		t.Errorf("wrong provider: %v", err)
	}
	if err := WriteSetup(home, "openai", "gpt-5", "sk-a b", false); err == nil {
		t.Errorf("a key with a space was accepted")
	}
	bad := "{\"default\": \"gpt-5\",\n \"models\": {,}}"
	writeFile(t, filepath.Join(home, ModelsFile), bad, 0o644)
	if err := WriteSetup(home, "openai", "gpt-5", "k", false); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed models.json: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(home, ModelsFile)); string(data) != bad {
		t.Errorf("setup rewrote a malformed models.json: %s", data)
	}
	if _, err := os.Stat(filepath.Join(home, CredentialsFile)); err == nil {
		t.Errorf("setup wrote credentials although it failed")
	}
}

func TestWriteSetupFixesAWideCredentialsFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, CredentialsFile)
	writeFile(t, path, `{"openai": "sk-old"}`, 0o644)
	if err := WriteSetup(home, "anthropic", "claude-haiku-4-5", "", false); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %o", st.Mode().Perm())
	}
	c := load(t, home)
	if c.credentials["openai"] != "sk-old" || c.credentials["anthropic"] != "" || c.Default != "claude-haiku-4-5" {
		t.Errorf("after setup with no key: default %q, %d keys", c.Default, len(c.credentials))
	}
}

func TestCatalogIsConsistent(t *testing.T) {
	provs := map[string]bool{}
	for _, p := range Providers() {
		provs[p.Name] = true
	}
	names := map[string]bool{}
	for _, m := range Catalog() {
		if !provs[m.Provider] || names[m.Name] || m.ContextWindow <= 0 || m.MaxOutputTokens <= 0 {
			t.Errorf("bad catalog entry %+v", m)
		}
		names[m.Name] = true
	}
	for _, p := range Providers() {
		if !names[p.DefaultModel] {
			t.Errorf("provider %s: default model %q is not in the catalog", p.Name, p.DefaultModel)
		}
	}
}

func TestHome(t *testing.T) {
	t.Setenv("GARUDA_HOME", "/x/y")
	if h, err := Home(); err != nil || h != "/x/y" {
		t.Errorf("home = %q %v", h, err)
	}
}

func TestLimits(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ModelsFile), `{"limits": {"max_steps": 7, "max_turn_tokens": 90000}}`, 0o644)
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits != (Limits{MaxSteps: 7, MaxTurnTokens: 90000}) {
		t.Fatalf("limits = %+v", c.Limits)
	}
}

// TestAvailableModelsHaveAKey: the models the editor may offer are those whose provider has a key (environment or
// credentials) or takes none; models.json says how a model reasons, and a wrong value is an error naming it.
func TestAvailableModelsHaveAKey(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ModelsFile), `{"providers": {"ollama": {"type": "openai", "base_url": "http://127.0.0.1:1/v1"}},
  "models": {"llama": {"provider": "ollama", "reasoning": "optional"}, "gpt-5-mini": {"reasoning": "none"}}}`, 0o644)
	writeFile(t, filepath.Join(home, CredentialsFile), `{"openai": "sk-openai-cred"}`, 0o600)
	c := load(t, home)
	got := map[string]string{}
	for _, m := range c.Available(envOf()) {
		got[m.Name] = m.Provider + " " + m.Reasoning
	}
	if got["llama"] != "ollama optional" || got["gpt-5"] != "openai always" || got["gpt-5-mini"] != "openai " {
		t.Errorf("available %v", got)
	}
	if _, ok := got["claude-sonnet-4-5"]; ok {
		t.Errorf("a model without a key is offered: %v", got)
	}
	if m := c.Available(envOf("ANTHROPIC_API_KEY")); len(m) <= len(got) {
		t.Errorf("the environment's key did not add Anthropic's models")
	}
	writeFile(t, filepath.Join(home, ModelsFile), `{"models": {"gpt-5": {"reasoning": "maybe"}}}`, 0o644)
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), `reasoning "maybe"`) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a wrong reasoning value: %v", err)
	}
}
