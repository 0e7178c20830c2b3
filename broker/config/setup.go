package config

import (
	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/internal/strictjson"

	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// WriteSetup stores what `garuda setup` chose: the key of provider in the credentials file
// (mode 0600, written atomically, other providers' keys kept; an empty apiKey stores none) and
// model as "default" in models.json (everything else in it kept). model is a NAME of the catalog
// or of models.json, or a model id of provider. A model id the configuration does not list for a
// provider that lists some is refused with the close names, unless force (a model newer than the
// catalog). It creates home (mode 0700) when absent.
func WriteSetup(home, provider, model, apiKey string, force bool) error {
	apiKey = strings.TrimSpace(apiKey)
	if strings.IndexFunc(apiKey, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		return errors.New("the API key contains spaces or control characters; paste it again")
	}
	// 0700: other users must not list or replace the files of the home folder.
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", home, err)
	}
	c, err := loadForSetup(home)
	if err != nil {
		return err
	}
	if _, ok := c.Providers[provider]; !ok {
		return fmt.Errorf("provider %q is not known (known: %s)", provider, strings.Join(c.providerNames(), ", "))
	}
	model = strings.TrimSpace(model)
	if model == "" {
		return errors.New("no model chosen")
	}
	def := model
	if m, ok := c.Models[model]; ok {
		if m.Provider != provider {
			return fmt.Errorf("model %q belongs to provider %q, not %q", model, m.Provider, provider)
		}
	} else {
		id := strings.TrimPrefix(model, provider+"/")
		if !force {
			if err := c.checkModelID(provider, id); err != nil {
				return err
			}
		}
		def = provider + "/" + id
	}
	if apiKey != "" { // an empty key stores nothing: the key may come from the environment
		c.credentials[provider] = apiKey
		data, err := json.MarshalIndent(c.credentials, "", "  ")
		if err != nil {
			return fmt.Errorf("encode credentials: %w", err)
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
		return nil, fmt.Errorf("%w", err)
	}
	if err := os.Chmod(credPath, 0o600); err != nil {
		return nil, fmt.Errorf("chmod 600 %s: %w", credPath, err)
	}
	c, err = Load(home)
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	return c, nil
}

// setDefault sets "default" in models.json, keeping the other keys as they are.
func setDefault(path, model string) error {
	doc := map[string]json.RawMessage{}
	data, err := conffile.ReadHome(path, conffile.MaxSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err // it names the file
	default:
		if err := strictjson.Unmarshal(path, data, &doc); err != nil {
			return err
		}
	}
	v, err := json.Marshal(model)
	if err != nil {
		return fmt.Errorf("encode the model name: %w", err)
	}
	doc["default"] = v
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return homefile.WriteAtomic(path, append(out, '\n'), 0o644)
}

// checkModelID refuses an id that provider's listed models do not have, naming the close ones; a provider with no
// listed models (a local server) takes any id.
func (c *Config) checkModelID(provider, id string) error {
	var names []string
	for _, m := range c.Models {
		if m.Provider != provider {
			continue
		}
		if m.ID == id {
			return nil
		}
		names = append(names, m.Name)
	}
	if len(names) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s has no model %q that Garuda knows", provider, id)
	if close := closeNames(id, names); len(close) > 0 {
		msg += "; did you mean " + strings.Join(close, ", ") + "?"
	} else {
		sort.Strings(names)
		msg += "; known: " + strings.Join(names, ", ") + "."
	}
	return errors.New(msg + " To store it as it is (a model newer than Garuda's list), add --force.")
}
