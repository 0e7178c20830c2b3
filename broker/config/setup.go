package config

import (
	"github.com/garuda-dev/garuda/broker/homefile"

	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// WriteSetup stores what `garuda setup` chose: the key of provider in the credentials file
// (mode 0600, written atomically, other providers' keys kept; an empty apiKey stores none) and
// model as "default" in models.json (everything else in it kept). model is a NAME of the catalog
// or of models.json, or a model id of provider. It creates home (mode 0700) when absent.
func WriteSetup(home, provider, model, apiKey string) error {
	apiKey = strings.TrimSpace(apiKey)
	if strings.IndexFunc(apiKey, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		return errors.New("setup: the API key contains spaces or control characters; paste it again")
	}
	// 0700: other users must not list or replace the files of the home folder.
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("setup: create %s: %w", home, err)
	}
	c, err := loadForSetup(home)
	if err != nil {
		return err
	}
	if _, ok := c.Providers[provider]; !ok {
		return fmt.Errorf("setup: provider %q is not known (known: %s)", provider, strings.Join(c.providerNames(), ", "))
	}
	model = strings.TrimSpace(model)
	if model == "" {
		return errors.New("setup: no model chosen")
	}
	def := model
	if m, ok := c.Models[model]; ok {
		if m.Provider != provider {
			return fmt.Errorf("setup: model %q belongs to provider %q, not %q", model, m.Provider, provider)
		}
	} else if !strings.HasPrefix(model, provider+"/") {
		def = provider + "/" + model
	}
	if apiKey != "" { // an empty key stores nothing: the key may come from the environment
		c.credentials[provider] = apiKey
		data, err := json.MarshalIndent(c.credentials, "", "  ")
		if err != nil {
			return fmt.Errorf("setup: encode credentials: %w", err)
		}
		if err := homefile.WriteAtomic(c.CredentialsPath, append(data, '\n'), 0o600); err != nil {
			return err
		}
	}
	return setDefault(c.ModelsPath, def)
}

// loadForSetup loads the configuration to merge into. A credentials file with a wide mode is
// read anyway (setup rewrites it with 0600); a malformed file stops setup, so nothing is lost.
func loadForSetup(home string) (*Config, error) {
	c, err := Load(home)
	if err == nil {
		return c, nil
	}
	credPath := filepath.Join(home, CredentialsFile)
	st, serr := os.Stat(credPath)
	if serr != nil || st.Mode().Perm()&0o077 == 0 {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if err := os.Chmod(credPath, 0o600); err != nil {
		return nil, fmt.Errorf("setup: chmod 600 %s: %w", credPath, err)
	}
	c, err = Load(home)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	return c, nil
}

// setDefault sets "default" in models.json, keeping the other keys as they are.
func setDefault(path, model string) error {
	doc := map[string]json.RawMessage{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("setup: read %s: %w", path, err)
	default:
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("setup: %s: %w", path, err)
		}
	}
	v, err := json.Marshal(model)
	if err != nil {
		return fmt.Errorf("setup: encode the model name: %w", err)
	}
	doc["default"] = v
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("setup: encode %s: %w", path, err)
	}
	return homefile.WriteAtomic(path, append(out, '\n'), 0o644)
}
