package broker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/garuda-dev/garuda/broker/conffile"
)

// maxInstructions caps the project's instructions file.
const maxInstructions = 64 << 10

// instructions finds the project's AGENTS.md, the nearest from the root up to the repository's top, else CLAUDE.md.
// Every path is decided as a read before it is looked at, and only an allowed one is: above the root, reads ask (and
// nothing can be asked while a session opens), so there a rule must allow them. Defends against a session's start
// that stats or reads outside what the policy allows (its instructions would tell what is there).
func (s *Service) instructions(sess *session) (text, file string) {
	allowed := s.allowRead(s.state(sess))
	dirs := []string{sess.root}
	for d := sess.root; ; {
		git := filepath.Join(d, ".git")
		if !allowed(git) {
			dirs = dirs[:1] // where the repository's top is cannot be looked for: the root alone
			break
		}
		if _, err := os.Lstat(git); err == nil {
			break // d is the repository's top
		}
		up := filepath.Dir(d)
		if up == d {
			dirs = dirs[:1] // no repository above the root: the root alone
			break
		}
		d = up
		dirs = append(dirs, d)
	}
	for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
		for _, d := range dirs {
			// A file the policy does not allow reading is not read: it would reach the model as instructions.
			if !allowed(filepath.Join(d, name)) {
				continue
			}
			at := d
			if d == sess.root {
				at = sess.fs.FDPath() // the folder the session holds open
			}
			data, err := conffile.ReadIn(at, name, maxInstructions)
			if err == nil {
				return string(data), filepath.Join(d, name)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				s.cfg.Log.Warn("project instructions skipped", "file", filepath.Join(d, name), "err", err)
			}
		}
	}
	return "", ""
}

// emptyFS is a file system with nothing in it (a home folder that does not exist yet).
func emptyFS() fs.FS { return fstestEmpty{} }

type fstestEmpty struct{}

func (fstestEmpty) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
