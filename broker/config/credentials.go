package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// readCredentials reads the credentials file: a JSON object of provider name -> API key.
// An absent file is no keys.
func readCredentials(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open credentials %s: %w", path, err)
	}
	defer f.Close()
	// The mode is checked on the open file, not by path, so that the file read is the file checked.
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat credentials %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("credentials %s is not a regular file", path)
	}
	// Keys readable by other users of the machine are as good as leaked: refuse them until fixed.
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("credentials %s has mode %04o: it holds API keys, so other users must not be able to read or change it; run `chmod 600 %s`", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read credentials %s: %w", path, err)
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
