// A session's private temp and cache folders, writable by its commands, outside $GARUDA_HOME.

package broker

import (
	"fmt"
	"os"
	"path/filepath"
)

type workDirs struct{ tmp, cache string }

// workBase holds every session's private folders of this user: in $TMPDIR, or /tmp where $TMPDIR is not an absolute
// path (a relative one would put them in the broker's working folder, the project, and the sandbox refuses it).
func workBase() string {
	tmp := os.TempDir()
	if !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, fmt.Sprintf("garuda-%d", os.Getuid()))
}

// shortBase holds the sessions' proxy sockets where $TMPDIR is too long a path for a socket below workBase.
func shortBase() string { return fmt.Sprintf("/tmp/garuda-%d", os.Getuid()) }

// removeSessionFolders removes what a session had in both bases: nothing of an ended session stays in /tmp.
func removeSessionFolders(id string) {
	for _, base := range []string{workBase(), shortBase()} {
		os.RemoveAll(filepath.Join(base, id))
	}
}

// workDirs are the session's private temp and cache folders, writable by its commands: outside $GARUDA_HOME,
// which commands cannot see.
func (s *Service) workDirs(sess *session) (workDirs, error) {
	base := workBase()
	if err := privateFolder(base); err != nil {
		return workDirs{}, err
	}
	w := workDirs{tmp: filepath.Join(base, sess.id, "tmp"), cache: filepath.Join(base, sess.id, "cache")}
	for _, d := range []string{w.tmp, w.cache} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return workDirs{}, fmt.Errorf("create %s: %w", d, err)
		}
	}
	return w, nil
}

// privateFolder makes dir (0700) if it is missing and checks that it is this user's alone: defends against another
// user who made the folder first to watch or plant files in it.
func privateFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return fmt.Errorf("%s is not a private folder of this user; remove it", dir)
	}
	return nil
}
