package broker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/garuda-dev/garuda/broker/conffile"
	"github.com/garuda-dev/garuda/policy"
)

// maxInstructions caps the project's instructions file.
const maxInstructions = 64 << 10

// instructions finds the project's AGENTS.md, the nearest from the root up to the repository's top, else CLAUDE.md.
func (s *Service) instructions(sess *session) (text, file string) {
	var dirs []string
	for d := sess.root; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil || d == filepath.Dir(d) {
			break
		}
	}
	// Without a repository above the root, only the root itself counts.
	if _, err := os.Lstat(filepath.Join(dirs[len(dirs)-1], ".git")); err != nil {
		dirs = dirs[:1]
	}
	st := s.state(sess)
	for _, name := range []string{"AGENTS.md", "CLAUDE.md"} {
		for _, d := range dirs {
			// A file that a rule denies reading is not read: it would reach the model as instructions.
			read := policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: filepath.Join(d, name)}
			if policy.Decide(read, st).Verdict == policy.Deny {
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
