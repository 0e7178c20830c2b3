package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// modelsSeeds are the models.json files of the tests above: good ones, and each kind of mistake.
var modelsSeeds = []string{
	`{"default":"gpt-5"}`,
	"{\n\"default\": \"local\",\n\"providers\": {\"ollama\": {\"type\": \"openai\", \"base_url\": \"http://127.0.0.1:11434/v1\", " +
		"\"api_key_env\": \"OLLAMA_KEY\"}},\n\"models\": {\"local\": {\"provider\": \"ollama\", \"id\": \"qwen3\", " +
		"\"context_window\": 32000, \"max_output_tokens\": 4096}},\n\"limits\": {\"max_steps\": 5, \"max_turn_tokens\": 9000}}",
	`{"providers": {"anthropic": {"base_url": "https://proxy.example/v1"}}}`,
	"{\n  \"default\": \"gpt-5\",\n  \"models\": {,}\n}", "{\n  \"default\": \"gpt-5\",\n", "{\n  \"defualt\": \"gpt-5\"\n}",
	"{\"providers\": {\n \"x\": {\"type\": \"openai\",\n  \"api_key\": \"k\"}}}",
	"{\n\"models\": {\n  \"m\": {\"provider\": \"openai\",\n     \"context_window\": \"big\"}}}",
	"{\"models\": {\"m\": {\"provider\": \"openai\", \"max_output_tokens\": -3}}}",
	"{\"models\": {\"m\": {\"provider\": \"openai\", \"max_output_tokens\": 1e99}}}",
	"{\"providers\": {\n\"g\": {\n\"type\": \"gemini\"}}}", "{\"providers\": {\"g\": {\"type\": \"openai\",\n\"base_url\": \"ftp://x\"}}}",
	"{\"models\": {\n\"m\": {\n\"provider\": \"nope\"}}}", "{\"default\": \"a\",\n\"default\": \"b\"}", "{\"default\": \"a\"}\n{}", "[]",
	"{\"limits\": {\"max_steps\": 0}}", `{"models": {"m": {"provider": "openai", "id": ""}}}`, "", "null", `{"providers":{"p":{"type":""}}}`,
}

// FuzzModels parses a fuzzed models.json over the catalog. A file that does not parse gives an error that starts
// with the file's path; one that parses gives a configuration a session can use: every model names a known
// provider and has an id, a window and an output limit; every provider has a known type and an http(s) URL or none.
func FuzzModels(f *testing.F) {
	for _, s := range modelsSeeds {
		f.Add(s)
	}
	catalog, err := Load(f.TempDir()) // the catalog alone: the folder holds no files
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data string) {
		c := *catalog
		c.Providers, c.Models = maps.Clone(catalog.Providers), maps.Clone(catalog.Models)
		c.ModelsPath = "/h/.garuda/" + ModelsFile
		if err := c.parseModels([]byte(data)); err != nil {
			if !strings.HasPrefix(err.Error(), c.ModelsPath+": ") {
				t.Fatalf("error %q does not start with the file's path", err)
			}
			return
		}
		for name, p := range c.Providers {
			if p.Type != TypeAnthropic && p.Type != TypeOpenAI {
				t.Fatalf("provider %q has type %q", name, p.Type)
			}
			if p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
				t.Fatalf("provider %q has base_url %q", name, p.BaseURL)
			}
		}
		for name, m := range c.Models {
			if _, ok := c.Providers[m.Provider]; !ok || m.ID == "" || m.ContextWindow <= 0 || m.MaxOutputTokens <= 0 {
				t.Fatalf("model %q is not usable: %+v", name, m)
			}
		}
		if c.Limits.MaxSteps < 0 || c.Limits.MaxTurnTokens < 0 {
			t.Fatalf("limits %+v", c.Limits)
		}
		if c.Default != "" {
			if r, err := c.Resolve("", func(string) bool { return true }); err == nil && (r.ModelID == "" || r.Type == "") {
				t.Fatalf("default %q resolves to %+v", c.Default, r)
			}
		}
	})
}

// FuzzCredentials parses a fuzzed credentials file. One that parses is a name -> key map that survives being
// written back as JSON; one that does not gives an error that starts with the path and shows no key.
func FuzzCredentials(f *testing.F) {
	for _, s := range []string{`{"anthropic":"sk-ant-secret","openai":"sk-x"}`, "{\n\"anthropic\": 5}",
		"{\"anthropic\": \"sk-ant-secret\"\n \"openai\": \"x\"}", "[\"sk-ant-secret\"]", `{"a":"k","a":"k2"}`, `{}`, ``,
		`{"a":"sk-ant-secret"} x`, `{"a":{"b":"sk-ant-secret"}}`, `{"a":"\u00e9\ud800"}`} {
		f.Add(s)
	}
	const path = "/h/.garuda/" + CredentialsFile
	f.Fuzz(func(t *testing.T, data string) {
		creds, err := parseCredentials(path, []byte(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("error %q does not start with the path", err)
			}
			for _, k := range keysIn(data) {
				if len(k) >= 6 && strings.Contains(err.Error(), k) {
					t.Fatalf("the error shows the key %q: %v", k, err)
				}
			}
			return
		}
		out, err := json.Marshal(creds)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseCredentials(path, out)
		if err != nil || !maps.Equal(creds, back) {
			t.Fatalf("%q written back as %s reads as %v, %v", data, out, back, err)
		}
	})
}

// keysIn returns the string values of the top-level object in data, as far as it is valid JSON, except those
// that are also a provider's name (which errors do show).
func keysIn(data string) []string {
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	names := map[string]bool{}
	var values []string
	for {
		name, err := dec.Token()
		if err != nil {
			break
		}
		names[fmt.Sprint(name)] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		if s, ok := v.(string); ok {
			values = append(values, s)
		}
	}
	var keys []string
	for _, v := range values {
		if !names[v] {
			keys = append(keys, v)
		}
	}
	return keys
}
