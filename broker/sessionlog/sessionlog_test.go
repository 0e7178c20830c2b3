package sessionlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestFileStartsAtFirstAppend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	w := Open(dir, "s1")
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open created something: %v", err)
	}
	if err := w.Append(KindPrompt, json.RawMessage(`{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{dir: 0o700, filepath.Join(dir, "s1.jsonl"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	w.Close()

	// A session closed before any prompt leaves no file.
	w2 := Open(dir, "s2")
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s2.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a session with no prompt has a file")
	}
	if err := w2.Append(KindPrompt, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
}

func TestRoundTripOneLinePerEntry(t *testing.T) {
	dir := t.TempDir()
	w := Open(dir, "abc_DEF-123")
	in := []struct {
		kind string
		data string
	}{
		{KindPrompt, "{\n  \"text\": \"fix the bug\\nin main.go\",\n  \"html\": \"<b>&</b>\"\n}"},
		{KindMessage, `{"text":"sure"}`},
		{KindToolCall, `{"id":"c1","name":"bash","input":{"command":"go test ./..."}}`},
		{KindToolResult, `{"id":"c1","status":"completed","output":"ok\n"}`},
		{KindMode, `"plan"`},
		{KindStop, ``},
	}
	for _, e := range in {
		if err := w.Append(e.kind, json.RawMessage(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "abc_DEF-123.jsonl"))
	if n := strings.Count(string(raw), "\n"); n != len(in) {
		t.Fatalf("%d lines for %d entries:\n%s", n, len(in), raw)
	}
	got, err := Read(filepath.Join(dir, "abc_DEF-123.jsonl"))
	if err != nil || len(got) != len(in) {
		t.Fatalf("Read = %d entries, %v", len(got), err)
	}
	for i, e := range in {
		if got[i].Kind != e.kind || got[i].Time.IsZero() {
			t.Fatalf("entry %d = %+v", i, got[i])
		}
		if e.data == "" {
			if got[i].Data != nil {
				t.Fatalf("entry %d data = %s, want none", i, got[i].Data)
			}
			continue
		}
		var want, have any
		json.Unmarshal([]byte(e.data), &want)
		json.Unmarshal(got[i].Data, &have)
		if fmt.Sprint(want) != fmt.Sprint(have) {
			t.Fatalf("entry %d data = %v, want %v", i, have, want)
		}
	}
}

func TestBadInputIsRefused(t *testing.T) {
	dir := t.TempDir()
	w := Open(dir, "s1")
	defer w.Close()
	if err := w.Append(KindMessage, json.RawMessage("{\"a\":1}\n{\"b\":2}")); err == nil {
		t.Fatal("two JSON values accepted as one entry")
	}
	if err := w.Append(KindMessage, json.RawMessage(`{"a":`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	if err := w.Append("Bad Kind\n", nil); err == nil {
		t.Fatal("kind with a newline accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "s1.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a refused entry created the file")
	}
}

func TestHostileSessionIDs(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "sessions")
	for _, id := range []string{"", ".", "..", "../escape", "a/b", "/tmp/x", "a\x00b", "a.b", strings.Repeat("x", 129)} {
		if err := Open(dir, id).Append(KindPrompt, nil); !errors.Is(err, ErrBadID) {
			t.Errorf("Append with id %q = %v, want ErrBadID", id, err)
		}
	}
	if des, _ := os.ReadDir(parent); len(des) != 0 {
		t.Fatalf("hostile ids created %v", des)
	}
	// Control: the longest valid id works.
	if err := Open(dir, strings.Repeat("x", 128)).Append(KindPrompt, nil); err != nil {
		t.Fatal(err)
	}
}

func TestPlantedSymlinkIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("precious\n"), 0o600)
	if err := os.Symlink(target, filepath.Join(dir, "s1.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := Open(dir, "s1").Append(KindPrompt, nil); err == nil {
		t.Fatal("Append through a planted symlink succeeded")
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Fatalf("target changed: %q", b)
	}
	// Negative control: an open without O_NOFOLLOW writes through the link.
	f, err := os.OpenFile(filepath.Join(dir, "s1.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("x")
	f.Close()
	if b, _ := os.ReadFile(target); string(b) == "precious\n" {
		t.Fatal("control: a plain open did not follow the link")
	}
}

func TestConcurrentAppendsKeepLinesWhole(t *testing.T) {
	dir := t.TempDir()
	w := Open(dir, "s1")
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := range 50 {
				d, _ := json.Marshal(map[string]string{"g": fmt.Sprint(g), "i": fmt.Sprint(i), "pad": strings.Repeat("z", 500)})
				if err := w.Append(KindToolResult, d); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	got, err := Read(filepath.Join(dir, "s1.jsonl"))
	if err != nil || len(got) != 1000 {
		t.Fatalf("Read = %d entries, %v; want 1000", len(got), err)
	}
}

func TestReadNamesATornLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(p, []byte(`{"time":"2026-12-02T10:00:00Z","kind":"prompt"}`+"\n"+`{"time":"2026-12-02T10:00:01Z","ki`), 0o600)
	got, err := Read(p)
	if err == nil || !strings.Contains(err.Error(), "line 2") || len(got) != 1 {
		t.Fatalf("Read = %d entries, %v; want 1 and an error naming line 2", len(got), err)
	}
}

// TestFileSizeIsBounded: entries that would take the file past its limit are refused with ErrFull, the file stays
// whole and under the limit, and the count starts from what an earlier writer left in the file.
func TestFileSizeIsBounded(t *testing.T) {
	dir := t.TempDir()
	w := Open(dir, "s1")
	w.limit = 4096
	data := json.RawMessage(`"` + strings.Repeat("x", 900) + `"`)
	kept := 0
	var err error
	for range 10 {
		if err = w.Append(KindMessage, data); err != nil {
			break
		}
		kept++
	}
	if !errors.Is(err, ErrFull) || kept != 4 {
		t.Fatalf("kept %d entries, then %v; want 4 then ErrFull", kept, err)
	}
	// A small entry still fits.
	if err := w.Append(KindStop, nil); err != nil {
		t.Fatalf("a small entry after a refused one: %v", err)
	}
	w.Close()
	entries, err := Read(w.Path())
	if err != nil || len(entries) != 5 {
		t.Fatalf("read back %d entries: %v", len(entries), err)
	}
	fi, _ := os.Stat(w.Path())
	if fi.Size() > 4096 {
		t.Fatalf("file is %d bytes, past the 4096 limit", fi.Size())
	}
	// A new writer of the same session counts the bytes already there.
	w2 := Open(dir, "s1")
	w2.limit = 4096
	if err := w2.Append(KindMessage, data); !errors.Is(err, ErrFull) {
		t.Fatalf("a second writer appended past the limit: %v", err)
	}
	w2.Close()
}
