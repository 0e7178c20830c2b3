// The mount table (/proc/self/mountinfo): its parsing, the mount points below a folder, and the other names a path
// has through other mounts of its file system.

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"golang.org/x/sys/unix"
)

// mountEntry is a line of /proc/self/mountinfo: the device, the folder of its file system that is mounted, and where.
type mountEntry struct{ dev, root, point string }

func readMountinfo() []mountEntry {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		if fields := strings.Fields(line); len(fields) >= 5 {
			out = append(out, mountEntry{dev: fields[2], root: unescapeMountinfo(fields[3]), point: unescapeMountinfo(fields[4])})
		}
	}
	return out
}

// unescapeMountinfo undoes the octal escapes (\040 for a space…) of a path in /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountPointsBelow lists the mount points of mounts strictly below dir.
func mountPointsBelow(dir string, mounts []mountEntry) []string {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	var out []string
	for _, m := range mounts {
		if rel, in := pathglob.Within(dir, m.point); in && rel != "" {
			out = append(out, m.point)
		}
	}
	return out
}

// withOtherNames adds to paths the other names, through other mounts of the same file system, of each of them
// (only names that reach the same file).
func withOtherNames(paths []string, mounts []mountEntry) []string {
	out := slices.Clone(paths)
	for _, p := range paths {
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(resolved, &st) != nil {
			continue
		}
		// The mount p is on: the deepest mount point above it, the last one mounted there.
		at := -1
		for i, m := range mounts {
			if _, in := pathglob.Within(m.point, resolved); in && (at < 0 || len(m.point) >= len(mounts[at].point)) {
				at = i
			}
		}
		if at < 0 {
			continue
		}
		rel, _ := pathglob.Within(mounts[at].point, resolved)
		inFS := filepath.Join(mounts[at].root, rel)
		for _, m := range mounts {
			rest, in := pathglob.Within(m.root, inFS)
			if m.dev != mounts[at].dev || !in {
				continue
			}
			other := filepath.Join(m.point, rest)
			var ost unix.Stat_t
			if other != resolved && !slices.Contains(out, other) && unix.Stat(other, &ost) == nil && ost.Dev == st.Dev && ost.Ino == st.Ino {
				out = append(out, other)
			}
		}
	}
	return out
}
