// What commands may not see: Garuda's home, the usual credential stores, and what read-deny rules name (for "**"
// rules in the project, the guard's walk asks the policy: readDenied).

package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"github.com/garuda-dev/garuda/policy"
)

// secrets are hidden from commands: Garuda's own home, the usual credential stores, and what read-deny rules name
// (but for "**" rules in the project, which the guard's walk finds: readDenied).
func (s *Service) secrets(st *policy.State) []string {
	out := []string{s.cfg.Home}
	if st.Team != nil && st.Team.AuditDir != "" {
		out = append(out, st.Team.AuditDir) // the audit log holds every session's command text
	}
	if s.userHome != "" {
		for _, p := range []string{".ssh", ".aws", ".config/gh", ".netrc", ".docker", ".gnupg", ".kube", ".git-credentials",
			".config/gcloud", ".azure", ".npmrc", ".pypirc"} {
			out = append(out, filepath.Join(s.userHome, p))
		}
	}
	for _, p := range policy.ReadDenyPatterns(st) {
		rel, inRoot := pathglob.Within(st.Root, p)
		folder, whole := strings.CutSuffix(p, "/**")
		switch {
		case !strings.ContainsAny(p, "*?["):
			out = append(out, p)
		case whole && !strings.ContainsAny(folder, "*?[") && (!inRoot || rel == ""):
			// "dir/**" denies the folder and all in it: hidden whole, never listed. Defends against each command's
			// start listing a hidden folder outside the project (work that grows with what it holds, and its names
			// shown to the command).
			out = append(out, folder)
		case inRoot && rel != "":
			// "**" and friends in the project: the guard's walk before the command asks the policy itself
			// (readDenied), so their semantics hold, and adds what they deny (guardBefore).
		default:
			matches, _ := filepath.Glob(p)
			out = append(out, matches...)
		}
	}
	var existing []string
	for _, p := range out {
		if _, err := os.Lstat(p); err == nil {
			existing = append(existing, p)
		}
	}
	return existing
}

// readDenied is what the guard's walk asks of every entry of the project when a read-deny rule with a glob names
// paths in it (nil otherwise): whether read_file may not read it, decided by the policy itself so that its
// semantics hold (a denied folder is hidden whole). The key names everything a read's denial depends on: when it
// changes, the guard walks whole again. Defends against a command reading a secret that read_file may not.
func readDenied(st *policy.State) (deny func(rel string) bool, key string) {
	globbed := false
	for _, p := range policy.ReadDenyPatterns(st) {
		if rel, in := pathglob.Within(st.Root, p); in && rel != "" && strings.ContainsAny(p, "*?[") {
			globbed = true
		}
	}
	if !globbed {
		return nil, ""
	}
	// Not the mode: a read is denied alike in both (a mode that would deny everything denies the command first).
	var k strings.Builder
	fmt.Fprintf(&k, "%s\x00%s\x00%s\x00%s\x00%v", st.Root, st.RealRoot, st.Home, st.OutputDir, st.TeamErr)
	for _, s := range []*policy.Settings{st.Team, st.User, st.Project} {
		if s == nil {
			continue
		}
		for _, r := range s.Deny {
			fmt.Fprintf(&k, "\x00%s\x01%s", r.Source, r.Text)
		}
	}
	return func(rel string) bool {
		req := policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: filepath.Join(st.Root, rel)}
		return policy.Decide(req, st).Verdict == policy.Deny
	}, k.String()
}
