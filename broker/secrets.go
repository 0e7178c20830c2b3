// What commands may not see: Garuda's home, the usual credential stores, and what read-deny rules name (the project
// walked for "**" rules).

package broker

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
)

// secrets are hidden from commands: Garuda's own home, the usual credential stores, and what read-deny rules name.
func (s *Service) secrets(st *policy.State) []string {
	out := []string{s.cfg.Home}
	if st.Team != nil && st.Team.AuditDir != "" {
		out = append(out, st.Team.AuditDir) // the audit log holds every session's command text
	}
	if s.userHome != "" {
		for _, p := range []string{".ssh", ".aws", ".config/gh", ".netrc", ".docker", ".gnupg", ".kube", ".git-credentials", ".config/gcloud", ".azure", ".npmrc", ".pypirc"} {
			out = append(out, filepath.Join(s.userHome, p))
		}
	}
	walkRoot := false
	for _, p := range policy.ReadDenyPatterns(st) {
		rel, inRoot := pathglob.Within(st.Root, p)
		switch {
		case !strings.ContainsAny(p, "*?["):
			out = append(out, p)
		case inRoot && rel != "":
			walkRoot = true // "**" and friends: the walk below asks the policy itself, so its semantics hold
		default:
			matches, _ := filepath.Glob(p)
			out = append(out, matches...)
		}
	}
	if walkRoot {
		out = append(out, deniedInRoot(st)...)
	}
	var existing []string
	for _, p := range out {
		if _, err := os.Lstat(p); err == nil {
			existing = append(existing, p)
		}
	}
	return existing
}

// maxProtectedWalk bounds the walk for read-denied paths.
const maxProtectedWalk = 50000

// deniedInRoot lists the files and folders of the root that the rules deny reading, for the sandbox to hide
// (a denied folder is hidden whole). Bounded like the scan of protected paths.
func deniedInRoot(st *policy.State) []string {
	var out []string
	n := 0
	filepath.WalkDir(st.Root, func(p string, d fs.DirEntry, err error) error {
		n++
		if err != nil || n > maxProtectedWalk {
			return filepath.SkipDir
		}
		if p == st.Root {
			return nil
		}
		if policy.Decide(policy.Request{Kind: policy.KindRead, Tool: "read_file", Path: p}, st).Verdict == policy.Deny {
			out = append(out, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out
}
