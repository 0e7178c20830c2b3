package config

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/garuda-dev/garuda/broker/conffile"
)

// readCredentials reads the credentials file: a JSON object of provider name -> API key.
// An absent file is no keys.
func readCredentials(path string) (map[string]string, error) {
	f, err := conffile.OpenHome(path, conffile.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	// The mode is checked on the open file, not by path, so that the file read is the file checked.
	// Keys readable by other users of the machine are as good as leaked: refuse them until fixed.
	if perm := f.Info.Mode().Perm(); perm&0o077 != 0 {
		f.Close()
		return nil, fmt.Errorf("credentials %s has mode %04o: it holds API keys, so other users must not be able to read or change it; "+
			"run `chmod 600 %s`", path, perm, path)
	}
	data, err := f.Read()
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	return parseCredentials(path, data)
}

func parseCredentials(path string, data []byte) (map[string]string, error) {
	creds := map[string]string{}
	p := newParser(path, data)
	err := p.Object("the file", func(name string, off int64) error {
		key, _, err := p.String(fmt.Sprintf("the key of %q", name))
		if err != nil {
			return err
		}
		creds[name] = key
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := p.End(); err != nil {
		return nil, err
	}
	return creds, nil
}
