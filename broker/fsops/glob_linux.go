//go:build linux

package fsops

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// glob is Glob: files below path (the root when empty) whose path relative to it matches pattern ("**" for any
// number of folders, {a,b} alternatives), .gitignore respected, .git and symlinks skipped, newest first, capped at
// Limits.ListEntries with a note. allow is asked for every file that would be returned (concurrently: it must be
// safe for concurrent use); files it refuses are left out, and nothing of the answer says they exist.
func (r *Root) glob(ctx context.Context, pattern, path string, allow func(abs string) bool) (*ListResult, error) {
	if path == "" {
		path = "."
	}
	startFD, startRel, startAbs, err := r.startWalk("glob", path, allow)
	if err != nil {
		return nil, err
	}
	defer unix.Close(startFD)
	// An absolute pattern below the search folder is taken relative to it.
	if filepath.IsAbs(pattern) {
		if rel, ok := strings.CutPrefix(filepath.Clean(pattern), startAbs+"/"); ok {
			pattern = rel
		}
	}
	gs, err := compileGlob(pattern, false)
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	type hit struct {
		rel   string
		mtime int64
	}
	var (
		mu   sync.Mutex
		hits []hit
	)
	w := &walker{ctx: ctx, startFD: startFD, startRel: startRel, descend: gs.mayContain, allow: allow, startAbs: startAbs}
	w.file = func(w *walker, dir *dirRef, name, rel string) {
		if !gs.matchFile(rel) {
			return
		}
		if allow != nil && !allow(filepath.Join(startAbs, rel)) {
			return
		}
		var st unix.Stat_t
		// A stat of one name in an open folder, not following a symlink: it cannot reach outside.
		if err := unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return
		}
		mu.Lock()
		hits = append(hits, hit{rel, st.Mtim.Nano()})
		mu.Unlock()
	}
	if err := w.run(r.rootIgnore(startRel, allow)); err != nil {
		return nil, fmt.Errorf("glob %q in %s: %w", pattern, startAbs, err)
	}
	slices.SortFunc(hits, func(a, b hit) int { return newestFirst(a.mtime, b.mtime, a.rel, b.rel) })
	res := &ListResult{Count: len(hits)}
	var sb strings.Builder
	for i, h := range hits {
		if i == r.Limits.ListEntries || sb.Len()+len(h.rel) > r.Limits.ListBytes {
			res.Truncated = true
			break
		}
		abs := filepath.Join(startAbs, h.rel)
		sb.WriteString(r.display(abs))
		sb.WriteByte('\n')
		res.Locations = append(res.Locations, Location{Path: abs})
	}
	res.Text = sb.String()
	var notes []string
	if len(hits) == 0 {
		notes = append(notes, "no files found")
	}
	if res.Truncated {
		notes = append(notes, fmt.Sprintf("showing the %d newest of %d files; narrow the pattern or the path", len(res.Locations), len(hits)))
	}
	res.Note = strings.Join(notes, "; ")
	return res, nil
}

// display is the path shown to the model: relative to the root when inside it, else absolute.
func (r *Root) display(abs string) string {
	if rel, ok := r.rel(abs); ok {
		return rel
	}
	return abs
}

// newestFirst orders glob's hits and grep's files the same way: the newest first, then by path.
func newestFirst(aMtime, bMtime int64, aRel, bRel string) int {
	return cmp.Or(cmp.Compare(bMtime, aMtime), strings.Compare(aRel, bRel))
}
