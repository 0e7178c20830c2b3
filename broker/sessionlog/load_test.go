package sessionlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newSession(t testing.TB, dir, id, root string, uid uint32, title string) {
	t.Helper()
	w := Create(dir, id, Header{Root: root, UID: uid})
	if err := w.Append(KindPrompt, json.RawMessage(`"hi"`)); err != nil {
		t.Fatal(err)
	}
	if title != "" {
		d, _ := json.Marshal(title)
		if err := w.Append(KindTitle, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLoadLocksTheFile: a session open in one writer (a new one, or a loaded one) cannot be loaded by another;
// once it is closed it can.
func TestLoadLocksTheFile(t *testing.T) {
	dir := t.TempDir()
	w := Create(dir, "s1", Header{Root: "/p", UID: 7})
	if err := w.Append(KindPrompt, json.RawMessage(`"hi"`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, "s1", 7, "/p"); !errors.Is(err, ErrLocked) {
		t.Fatalf("load of a session being written = %v, want ErrLocked", err)
	}
	w.Close()
	l, err := Load(dir, "s1", 7, "/p")
	if err != nil {
		t.Fatalf("load after close: %v", err)
	}
	if es := entries(t, l); len(es) != 1 || es[0].Kind != KindPrompt || l.Header.Root != "/p" {
		t.Fatalf("loaded %+v", l)
	}
	if _, err := Load(dir, "s1", 7, "/p"); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second load = %v, want ErrLocked", err)
	}
	// The loaded writer appends after what was there.
	if err := l.Writer.Append(KindStop, nil); err != nil {
		t.Fatal(err)
	}
	l.Writer.Close()
	es, err := Read(filepath.Join(dir, "s1.jsonl"))
	if err != nil || len(es) != 3 || es[0].Kind != KindHeader || es[2].Kind != KindStop {
		t.Fatalf("after the append: %+v, %v", es, err)
	}
}

// TestLoadRefusesOthersSessions: another user's session, another root's, a file with no header and a planted
// symlink are refused, and none is changed.
func TestLoadRefusesOthersSessions(t *testing.T) {
	dir := t.TempDir()
	newSession(t, dir, "s1", "/p", 7, "")
	before, _ := os.ReadFile(filepath.Join(dir, "s1.jsonl"))
	if _, err := Load(dir, "s1", 8, "/p"); !errors.Is(err, ErrForeign) {
		t.Errorf("another uid: %v", err)
	}
	if _, err := Load(dir, "s1", 7, "/q"); !errors.Is(err, ErrForeign) {
		t.Errorf("another root: %v", err)
	}
	if _, err := Load(dir, "../s1", 7, "/p"); !errors.Is(err, ErrBadID) {
		t.Errorf("a path as id: %v", err)
	}
	if _, err := Load(dir, "nope", 7, "/p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "s1.jsonl")); string(after) != string(before) {
		t.Error("a refused load changed the file")
	}
	// Control: the owner on the root loads it.
	l, err := Load(dir, "s1", 7, "/p")
	if err != nil {
		t.Fatal(err)
	}
	l.Writer.Close()

	// A file of the old format (no header) is not taken for a session.
	old := Open(dir, "s2")
	old.Append(KindPrompt, json.RawMessage(`"hi"`))
	old.Close()
	if _, err := Load(dir, "s2", 7, "/p"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a file without a header: %v", err)
	}
	// A symlink planted as a session file is not followed.
	target := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(target, before, 0o600)
	os.Symlink(target, filepath.Join(dir, "s3.jsonl"))
	if _, err := Load(dir, "s3", 7, "/p"); err == nil {
		t.Error("a symlinked session file loaded")
	}
}

// TestTornLineIsCutAtTheNextAppend: a torn last line is read up to the last whole entry, with a note; the file is
// unchanged until an append, which cuts it first.
func TestTornLineIsCutAtTheNextAppend(t *testing.T) {
	dir := t.TempDir()
	newSession(t, dir, "s1", "/p", 7, "")
	p := filepath.Join(dir, "s1.jsonl")
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"time":"2026-12-04T00:00:00Z","ki`)
	f.Close()
	torn, _ := os.ReadFile(p)
	l, err := Load(dir, "s1", 7, "/p")
	if err != nil || l.Torn == "" || len(entries(t, l)) != 1 {
		t.Fatalf("load of a torn file: %+v, %v", l, err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(torn) {
		t.Fatal("the load changed the file before an append")
	}
	l.Writer.Append(KindStop, nil)
	l.Writer.Close()
	es, err := Read(p)
	if err != nil || len(es) != 3 {
		t.Fatalf("after the append: %d entries, %v", len(es), err)
	}
	// A broken line that is not the last is no crash's: refused.
	raw, _ := os.ReadFile(p)
	lines := strings.SplitAfter(string(raw), "\n")
	os.WriteFile(p, []byte(lines[0]+"garbage\n"+strings.Join(lines[1:], "")), 0o600)
	if _, err := Load(dir, "s1", 7, "/p"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "line 2") ||
		!strings.Contains(err.Error(), "start a new session") {
		t.Errorf("a hand-edited line (where, and what to do): %v", err)
	}
}

// TestListPagesNewestFirst: 250 sessions of one user and root, among others', come in pages of 100, newest first,
// each once, with their titles; a made-up cursor is refused.
func TestListPagesNewestFirst(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 250 {
		w := Create(dir, fmt.Sprintf("s%03d", i), Header{Root: "/p", UID: 7})
		w.now = func() time.Time { return base.Add(time.Duration(i) * time.Second) }
		d, _ := json.Marshal(fmt.Sprintf("title %d", i))
		if err := w.Append(KindTitle, d); err != nil {
			t.Fatal(err)
		}
		w.Close()
		// The file's time as its entries say: on a loaded machine the real ones would be seconds apart and mix with
		// the entries' made-up ones where List reads entries to break a near tie.
		at := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(dir, fmt.Sprintf("s%03d.jsonl", i)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	newSession(t, dir, "other-user", "/p", 8, "")
	newSession(t, dir, "other-root", "/q", 7, "")
	var got []Summary
	cursor := ""
	pages := 0
	for {
		page, next, err := List(dir, 7, "/p", cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || len(got) != 250 {
		t.Fatalf("%d pages, %d sessions; want 3 and 250", pages, len(got))
	}
	for i, s := range got {
		want := 249 - i
		if s.ID != fmt.Sprintf("s%03d", want) || s.Title != fmt.Sprintf("title %d", want) || s.Root != "/p" {
			t.Fatalf("item %d = %+v, want s%03d", i, s, want)
		}
	}
	all, _, _ := List(dir, 7, "", "", 1000)
	if len(all) != 251 {
		t.Errorf("every root: %d sessions, want 251", len(all))
	}
	if _, _, err := List(dir, 7, "/p", "bm90LWEtY3Vyc29y", 100); !errors.Is(err, ErrBadCursor) {
		t.Errorf("a made-up cursor: %v", err)
	}
	// Without the sidecar the header still lists the session (without its title).
	os.Remove(filepath.Join(dir, "s000"+metaSuffix))
	all, _, _ = List(dir, 7, "/p", "", 1000)
	if len(all) != 250 || all[249].ID != "s000" || all[249].Title != "" {
		t.Errorf("without the sidecar: %d sessions, last %+v", len(all), all[len(all)-1])
	}
}

// BenchmarkList1000: the session/list of a user with 1,000 sessions (the broker's part), written a minute apart.
func BenchmarkList1000(b *testing.B) {
	dir := b.TempDir()
	start := time.Now().Add(-1000 * time.Minute)
	for i := range 1000 {
		w := Create(dir, fmt.Sprintf("s%04d", i), Header{Root: "/p", UID: 7})
		for range 20 {
			w.Append(KindMessage, json.RawMessage(`{"role":"user","content":[{"type":"text","text":"`+strings.Repeat("x", 500)+`"}]}`))
		}
		w.Append(KindTitle, json.RawMessage(`"a title"`))
		w.Close()
		at := start.Add(time.Duration(i) * time.Minute)
		os.Chtimes(w.Path(), at, at)
	}
	b.ResetTimer()
	for b.Loop() {
		page, _, err := List(dir, 7, "/p", "", 100)
		if err != nil || len(page) != 100 {
			b.Fatal(len(page), err)
		}
	}
}

// entries collects what Each gives.
func entries(t *testing.T, l *Loaded) []Entry {
	t.Helper()
	var out []Entry
	if err := l.Each(func(e Entry) error { out = append(out, e); return nil }); err != nil {
		t.Fatalf("Each: %v", err)
	}
	return out
}

// TestLoadReadsOnlyWhatItChecked: entries appended after Load (by the loaded writer) are not given by Each, and a
// long session is given whole, in order, though Load keeps only its header.
func TestLoadReadsOnlyWhatItChecked(t *testing.T) {
	dir := t.TempDir()
	w := Create(dir, "s1", Header{Root: "/p", UID: 7})
	for i := range 3000 {
		if err := w.Append(KindPrompt, json.RawMessage(strconv.Quote(strings.Repeat("x", i)))); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	l, err := Load(dir, "s1", 7, "/p")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Writer.Close()
	if err := l.Writer.Append(KindStop, nil); err != nil {
		t.Fatal(err)
	}
	es := entries(t, l)
	if len(es) != 3000 {
		t.Fatalf("Each gave %d entries, want the 3000 there were at Load", len(es))
	}
	for i, e := range es {
		if e.Kind != KindPrompt || string(e.Data) != strconv.Quote(strings.Repeat("x", i)) {
			t.Fatalf("entry %d: %s %.40s", i, e.Kind, e.Data)
		}
	}
}

// BenchmarkLoad64MiB: Load and Each of a 64 MiB session (4,000 entries of 16 KiB), as ResumeSession does; peak-MiB
// is the most heap in use seen while the entries are given (sampled every 100 entries), which must stay far below
// the file's size.
func BenchmarkLoad64MiB(b *testing.B) {
	dir := b.TempDir()
	w := Create(dir, "s1", Header{Root: "/p", UID: 7})
	text := json.RawMessage(strconv.Quote(strings.Repeat("x", 16<<10)))
	for range 4000 {
		if err := w.Append(KindMessage, text); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	var peak uint64
	var ms runtime.MemStats
	runtime.GC()
	for b.Loop() {
		l, err := Load(dir, "s1", 7, "/p")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		err = l.Each(func(Entry) error {
			if n++; n%100 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			return nil
		})
		l.Writer.Close()
		if err != nil || n != 4000 {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
}

// A live session lists before it has a sidecar (the header line says the same), its title's sidecar lists it with
// the title, and a session that never got a title has its sidecar once closed, for the listings after.
func TestSidecarComesWithTheTitleOrAtClose(t *testing.T) {
	dir := t.TempDir()
	sidecar := func(id string) Header {
		var h Header
		b, err := os.ReadFile(filepath.Join(dir, id+metaSuffix))
		if err == nil {
			err = json.Unmarshal(b, &h)
		}
		if err != nil {
			t.Fatalf("%s's sidecar: %v", id, err)
		}
		return h
	}
	listed := func(id string) Summary {
		all, _, err := List(dir, 7, "/p", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			if s.ID == id {
				return s
			}
		}
		t.Fatalf("%s is not listed: %+v", id, all)
		return Summary{}
	}
	untitled := Create(dir, "untitled", Header{Root: "/p", UID: 7})
	if err := untitled.Append(KindMessage, json.RawMessage(`{"role":"user"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "untitled"+metaSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a sidecar before the title: %v", err)
	}
	if s := listed("untitled"); s.Root != "/p" || s.Title != "" {
		t.Errorf("a live session without its sidecar listed as %+v", s)
	}
	untitled.Close()
	if h := sidecar("untitled"); h.Root != "/p" || h.UID != 7 || h.Title != "" {
		t.Errorf("the sidecar written at close: %+v", h)
	}

	titled := Create(dir, "titled", Header{Root: "/p", UID: 7})
	defer titled.Close()
	if err := titled.Append(KindTitle, json.RawMessage(`"fix the build"`)); err != nil {
		t.Fatal(err)
	}
	if h := sidecar("titled"); h.Title != "fix the build" {
		t.Errorf("the title's sidecar: %+v", h)
	}
	if s := listed("titled"); s.Title != "fix the build" {
		t.Errorf("a titled live session listed as %+v", s)
	}
}
