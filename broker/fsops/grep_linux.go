//go:build linux

package fsops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

type grepLine struct {
	n     int
	match bool
	text  string
}

type grepFile struct {
	rel   string // relative to the search folder
	mtime int64
	count int
	lines []grepLine
}

// grep is Grep: RE2 syntax (Go's regexp), over the files below req.Path (the root when empty) that req.Glob
// matches, .gitignore respected, binary files skipped, searched in parallel; capped at Limits.ListEntries with a
// note. allow is asked (concurrently) before a file is opened; refused files are left out, and nothing of the
// answer (no match, count or note) says they exist.
func (r *Root) grep(ctx context.Context, req GrepRequest, allow func(abs string) bool) (*ListResult, error) {
	mode := req.OutputMode
	switch mode {
	case "":
		mode = "files"
	case "content", "files", "count":
	default:
		return nil, fmt.Errorf("grep: output_mode %q: want content, files or count", mode)
	}
	m, err := compileMatcher(req.Pattern, req.CaseInsensitive)
	if err != nil {
		return nil, err
	}
	var gs *globSet
	if req.Glob != "" {
		if gs, err = compileGlob(req.Glob, true); err != nil {
			return nil, fmt.Errorf("grep glob %q: %w", req.Glob, err)
		}
	}
	g := &grepSearch{m: m, gs: gs, mode: mode, allow: allow, lineChars: r.Limits.GrepLineChar,
		stopAt: int64(r.Limits.ListEntries) * 4}
	if mode == "content" {
		g.ctxLines = min(max(req.Context, 0), 20)
	}
	// A path naming one regular file searches that file alone (the glob filter does not apply).
	if f, abs, st := r.openSearchFile(req.Path, allow); f != nil {
		defer f.Close()
		g.startAbs = filepath.Dir(abs)
		if allow == nil || allow(abs) {
			if gf, ok := searchFD(ctx, int(f.Fd()), st.Size, st.Mtim.Nano(), filepath.Base(abs), m, mode, g.ctxLines, g.lineChars); ok {
				g.files = append(g.files, gf)
			}
		}
	} else if err := r.grepTree(ctx, req.Path, g); err != nil {
		return nil, err
	}
	return r.grepResult(g), nil
}

// grepSearch is the state of one grep call, shared by its workers.
type grepSearch struct {
	m         *matcher
	gs        *globSet
	mode      string
	ctxLines  int
	lineChars int
	allow     func(string) bool
	startAbs  string
	stopAt    int64 // the search stops well past the cap: the result stays bounded whatever the pattern

	mu    sync.Mutex
	files []grepFile
	total atomic.Int64 // matching lines (content, count) or files (files) found so far
	cut   atomic.Bool  // a file was left unsearched: the counts are lower bounds
}

// openSearchFile opens p when it names a regular file inside the root (else nil), with its real path: symlinks
// beneath the root are followed by follow, where they lead decided by allow before it is opened.
func (r *Root) openSearchFile(p string, allow func(abs string) bool) (*os.File, string, *unix.Stat_t) {
	if p == "" {
		return nil, "", nil
	}
	t, err := r.resolve(p, false, resolveRead)
	if err != nil {
		return nil, "", nil
	}
	defer t.close()
	if t.rel, err = r.follow(t.rel, allow); err != nil {
		return nil, "", nil
	}
	t.flags = resolveWrite
	f, st, err := openRegular(t)
	if err != nil {
		return nil, "", nil
	}
	return f, filepath.Join(r.path, filepath.FromSlash(t.rel)), st
}

// grepTree searches the folder p in parallel.
func (r *Root) grepTree(ctx context.Context, p string, g *grepSearch) error {
	startFD, startRel, startAbs, err := r.startWalk("grep", p, g.allow)
	if err != nil {
		return err
	}
	defer unix.Close(startFD)
	g.startAbs = startAbs
	w := &walker{ctx: ctx, startFD: startFD, startRel: startRel, descend: func(string) bool { return true },
		allow: g.allow, startAbs: startAbs}
	w.file = func(w *walker, dir *dirRef, name, rel string) {
		if g.gs != nil && !g.gs.matchFile(rel) {
			return
		}
		if g.allow != nil && !g.allow(filepath.Join(startAbs, rel)) {
			return
		}
		dir.acquire()
		work := func() error {
			defer dir.release()
			if g.total.Load() > g.stopAt {
				g.cut.Store(true)
				w.stop()
				return nil
			}
			if w.done() {
				return nil
			}
			gf, ok := searchFile(ctx, dir.fd, name, rel, g.m, g.mode, g.ctxLines, g.lineChars)
			if !ok {
				return nil
			}
			g.mu.Lock()
			g.files = append(g.files, gf)
			g.mu.Unlock()
			n := int64(gf.count)
			if g.mode == "files" {
				n = 1
			}
			g.total.Add(n)
			return nil
		}
		if !w.g.TryGo(work) {
			work()
		}
	}
	if err := w.run(r.rootIgnore(startRel, g.allow)); err != nil {
		return fmt.Errorf("grep in %s: %w", startAbs, err)
	}
	return nil
}

// grepResult sorts the files found and writes the capped text, locations and notes.
func (r *Root) grepResult(g *grepSearch) *ListResult {
	mode, ctxLines, startAbs, files, cut := g.mode, g.ctxLines, g.startAbs, g.files, g.cut.Load()

	if mode == "files" {
		slices.SortFunc(files, func(a, b grepFile) int { return newestFirst(a.mtime, b.mtime, a.rel, b.rel) })
	} else {
		slices.SortFunc(files, func(a, b grepFile) int { return strings.Compare(a.rel, b.rel) })
	}
	res := &ListResult{Truncated: cut}
	var sb strings.Builder
	shown, found := 0, 0
	outputFull := false
	full := func(add int) bool {
		if outputFull || shown >= r.Limits.ListEntries || sb.Len()+add > r.Limits.ListBytes {
			outputFull = true
			return true
		}
		return false
	}
outer:
	for _, f := range files {
		abs := filepath.Join(startAbs, f.rel)
		disp := r.display(abs)
		switch mode {
		case "files":
			found++
			if full(len(disp) + 1) {
				continue
			}
			sb.WriteString(disp)
			sb.WriteByte('\n')
			res.Locations = append(res.Locations, Location{Path: abs})
			shown++
		case "count":
			found += f.count
			line := disp + ":" + strconv.Itoa(f.count) + "\n"
			if full(len(line)) {
				continue
			}
			sb.WriteString(line)
			res.Locations = append(res.Locations, Location{Path: abs})
			shown++
		case "content":
			found += f.count
			if outputFull {
				continue
			}
			prev := -1
			for _, l := range f.lines {
				sep := "-"
				if l.match {
					sep = ":"
				}
				line := disp + sep + strconv.Itoa(l.n) + sep + l.text + "\n"
				if ctxLines > 0 && prev >= 0 && l.n > prev+1 {
					line = "--\n" + line
				}
				if full(len(line)) {
					continue outer
				}
				sb.WriteString(line)
				prev = l.n
				if l.match {
					res.Locations = append(res.Locations, Location{Path: abs, Line: l.n})
					shown++
				}
			}
		}
	}
	res.Text = sb.String()
	res.Count = found
	res.Truncated = res.Truncated || outputFull
	var notes []string
	unit := map[string]string{"files": "files", "count": "matching lines", "content": "matching lines"}[mode]
	if found == 0 && !res.Truncated {
		notes = append(notes, "no matches")
	}
	if res.Truncated {
		what := strconv.Itoa(found)
		if cut {
			what = "more than " + what
		}
		notes = append(notes, fmt.Sprintf("output cut: showing %d of %s %s; narrow the pattern, the path or the glob", shown, what, unit))
	}
	res.Note = strings.Join(notes, "; ")
	return res
}

// bufPool holds read buffers so that a search over many files does not allocate one per file.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// mmapAbove is the size from which a file is mapped instead of read.
const mmapAbove = 4 << 20

// searchFile opens the file name in the folder dirfd (one component beneath it, no symlinks, no magic links;
// non-blocking then fstat: only regular files are read) and searches it; ok is false for files without a match,
// binary files and files it cannot read. rel is its path relative to the search folder.
func searchFile(ctx context.Context, dirfd int, name, rel string, m *matcher, mode string, ctxLines, lineChars int) (gf grepFile, ok bool) {
	fd, err := openBelow(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0, resolveWrite)
	if err != nil {
		return gf, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size == 0 {
		return gf, false
	}
	return searchFD(ctx, fd, st.Size, st.Mtim.Nano(), rel, m, mode, ctxLines, lineChars)
}

// searchFD searches the open regular file fd of the given size.
func searchFD(ctx context.Context, fd int, size, mtime int64, rel string, m *matcher, mode string, ctxLines,
	lineChars int) (gf grepFile, ok bool) {
	var buf []byte
	if size >= mmapAbove {
		b, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE)
		if err != nil {
			return gf, false
		}
		defer unix.Munmap(b)
		// A file truncated while mapped (a hostile command can do it at will) makes reads past its new end raise
		// SIGBUS, which would kill the broker: turn the fault into a panic of this goroutine and skip the file.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if e := recover(); e != nil {
				if _, fault := e.(interface{ Addr() uintptr }); !fault {
					panic(e)
				}
				gf, ok = grepFile{}, false
			}
		}()
		buf = b
	} else {
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		if cap(*bp) < int(size)+1 {
			*bp = make([]byte, 0, int(size)+1)
		}
		b := (*bp)[:int(size)+1]
		n := 0
		for n < len(b) {
			k, err := unix.Pread(fd, b[n:], int64(n))
			if k <= 0 || err != nil {
				break
			}
			n += k
		}
		buf = b[:n]
	}
	// Binary files (a NUL byte anywhere) are skipped, as ripgrep does.
	if bytes.IndexByte(buf, 0) >= 0 {
		return gf, false
	}
	gf = grepFile{rel: rel, mtime: mtime}
	var matched [][2]int
	m.matchLines(ctx, buf, func(ls, le int) bool {
		gf.count++
		if mode == "files" {
			return false
		}
		if mode == "content" {
			matched = append(matched, [2]int{ls, le})
		}
		return true
	})
	if gf.count == 0 {
		return gf, false
	}
	if mode != "content" {
		return gf, true
	}
	// Line numbers: count newlines between consecutive matches (vectorised), and add context lines around them.
	lineNo, counted := 1, 0
	last := 0 // last line number emitted
	for i, mr := range matched {
		lineNo += bytes.Count(buf[counted:mr[0]], []byte{'\n'})
		counted = mr[0]
		if ctxLines > 0 {
			// Lines before: walk back from the match line.
			var before []grepLine
			s := mr[0]
			for n := lineNo - 1; n > last && n >= lineNo-ctxLines && s > 0; n-- {
				e := s - 1
				s = bytes.LastIndexByte(buf[:e], '\n') + 1
				before = append(before, grepLine{n: n, text: cutLine(buf[s:e], lineChars)})
			}
			slices.Reverse(before)
			gf.lines = append(gf.lines, before...)
		}
		gf.lines = append(gf.lines, grepLine{n: lineNo, match: true, text: cutLine(buf[mr[0]:mr[1]], lineChars)})
		last = lineNo
		if ctxLines > 0 {
			nextMatch := len(buf)
			if i+1 < len(matched) {
				nextMatch = matched[i+1][0]
			}
			s := mr[1] + 1
			for n := lineNo + 1; n <= lineNo+ctxLines && s < nextMatch && s < len(buf); n++ {
				e := bytes.IndexByte(buf[s:], '\n')
				if e < 0 {
					e = len(buf)
				} else {
					e += s
				}
				gf.lines = append(gf.lines, grepLine{n: n, text: cutLine(buf[s:e], lineChars)})
				last = n
				s = e + 1
			}
		}
	}
	return gf, true
}

// cutLine makes a result line safe to show: no trailing \r, invalid UTF-8 replaced, at most n characters.
func cutLine(b []byte, n int) string {
	b = bytes.TrimSuffix(b, []byte("\r"))
	s, cut, _ := shownLine(b, n, false)
	if cut {
		s += " [...]"
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
