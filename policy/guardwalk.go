package policy

import (
	"path"
	"strings"
)

// GuardSettings bound the command guard's walk of the root (broker/guard).
type GuardSettings struct {
	MaxEntries int      // 0: DefaultGuardEntries
	Skip       []string // root-relative folders the walk does not enter
}

// DefaultGuardEntries is how many files and folders the guard walks by default before it refuses commands.
const DefaultGuardEntries = 200000

// GuardSkipAlways are the folder names the walk enters, at any depth, only for what git would find there (a
// repository planted in it runs on git status in a package's folder). node_modules is the package managers' output:
// the project's own build and tests run what it holds anyway (its .bin, install scripts), so a file there is the
// project's code, not a trap for a later program; it is often larger than the rest of the tree.
var GuardSkipAlways = []string{"node_modules"}

// GuardWalk returns the guard's walk limit and the root-relative folders it skips, from team policy and the
// user's settings: the user's limit wins over the team's, the skipped folders of both count. A project's own
// settings never widen what the guard leaves unchecked.
func GuardWalk(st *State) (maxEntries int, skip []string) {
	maxEntries = DefaultGuardEntries
	for _, s := range []*Settings{st.Team, st.User} {
		if s == nil || s.Guard == nil {
			continue
		}
		if s.Guard.MaxEntries > 0 {
			maxEntries = s.Guard.MaxEntries
		}
		skip = append(skip, s.Guard.Skip...)
	}
	return maxEntries, skip
}

func mergeGuard(a, b *GuardSettings) *GuardSettings {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	m := &GuardSettings{MaxEntries: max(a.MaxEntries, b.MaxEntries), Skip: append(append([]string{}, a.Skip...), b.Skip...)}
	return m
}

func (p *settingsParser) guard(s *Settings, off int64) error {
	g := &GuardSettings{}
	err := p.keys(`"guard"`, func(k string, off int64) error {
		switch k {
		case "max_entries":
			var n int
			if err := p.Decode(&n); err != nil || n <= 0 {
				return p.Errorf(off, "guard.max_entries must be a positive whole number")
			}
			g.MaxEntries = n
			return nil
		case "skip":
			return p.strings(`"guard.skip"`, func(v string, off int64) error {
				c := path.Clean(strings.TrimSuffix(v, "/"))
				if v == "" || path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(c, 0) {
					return p.Errorf(off, "guard.skip: %q must be a folder relative to the project root", v)
				}
				g.Skip = append(g.Skip, c)
				return nil
			})
		default:
			return p.Errorf(off, "unknown key %q in \"guard\" (want max_entries or skip)", k)
		}
	})
	if err != nil {
		return err
	}
	s.Guard = g
	return nil
}
