package guard

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// plantFSMonitor is a command that plants a nested repository whose core.fsmonitor git runs at the user's next
// `git status` in it.
const plantFSMonitor = `git init -q nested && printf '#!/bin/sh\ntouch "$PWD/../PWNED"\n' > fsm && chmod +x fsm && ` +
	`git -C nested config core.fsmonitor "$PWD/fsm"`

// A run's scan before, written by one guard (Pending) and read back by another of the same root (a later broker's,
// Resume), is what the run's own check would have compared with: the resumed watch undoes the plant. Control: a
// later guard without the pending scan takes the plant for the user's own, and git runs it.
func TestGuardPendingRoundTrip(t *testing.T) {
	for _, resume := range []bool{true, false} {
		root := t.TempDir()
		sh(t, root, "git init -q && echo x > f")
		g := New(root, Options{MaxEntries: 10000})
		w, err := g.Begin()
		if err != nil {
			t.Fatal(err)
		}
		data, err := w.Pending()
		if err != nil {
			t.Fatal(err)
		}
		g.Close() // the broker dies during the run
		sh(t, root, plantFSMonitor)

		later := New(root, Options{MaxEntries: 10000})
		if resume {
			w2, err := later.Resume(data)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := w2.Check()
			if err != nil {
				t.Fatal(err)
			}
			if !undoneSays(rep, "core.fsmonitor") {
				t.Errorf("resumed check did not undo the fsmonitor: %+v", rep)
			}
		} else {
			w2, err := later.Begin() // the later session's first scan, as before this change
			if err != nil {
				t.Fatal(err)
			}
			if rep, _ := w2.Check(); !rep.Empty() {
				t.Errorf("control: a fresh scan undid something: %+v", rep)
			}
		}
		later.Close()
		userGit(t, filepath.Join(root, "nested"), "status")
		if planted := exists(filepath.Join(root, "PWNED")); planted == resume {
			t.Errorf("resume %v: git ran the planted fsmonitor: %v", resume, planted)
		}
	}
}

// A pending file that is not one of this root's, is corrupt, oversized, or names a path outside the root is
// refused whole (the broker removes it with a warning).
func TestGuardPendingRefusesBadFiles(t *testing.T) {
	root := t.TempDir()
	sh(t, root, "git init -q")
	g := New(root, Options{MaxEntries: 10000})
	defer g.Close()
	w, err := g.Begin()
	if err != nil {
		t.Fatal(err)
	}
	good, err := w.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resume(good); err != nil {
		t.Fatalf("a good file is refused: %v", err)
	}
	s := string(good)
	edit := func(f func(*pending)) string {
		var p pending
		if err := json.Unmarshal(good, &p); err != nil {
			t.Fatal(err)
		}
		f(&p)
		data, _ := json.Marshal(p)
		return string(data)
	}
	bad := map[string]string{
		"truncated":       s[:len(s)/2],
		"garbage":         "\x00\xff not json",
		"oversized":       strings.Repeat(" ", MaxPending+1),
		"trailing data":   s + "{}",
		"unknown field":   strings.Replace(s, `{"Version"`, `{"Evil":1,"Version"`, 1),
		"another root":    strings.Replace(s, `"Root":"`, `"Root":"/elsewhere`, 1),
		"another version": strings.Replace(s, `"Version":1`, `"Version":2`, 1),
		"path outside":    edit(func(p *pending) { p.LinkTo = map[string]string{"../outside": "/etc"} }),
		"absolute path":   edit(func(p *pending) { p.Links = append(p.Links, "/etc/passwd") }),
		"dot-dot path":    edit(func(p *pending) { p.Pointers = map[string]string{"a/../../b": "x"} }),
		"the root itself": edit(func(p *pending) { p.Protected["."] = "absent" }),
		"hook outside":    edit(func(p *pending) { p.Repos[".git"].Hooks["../../x"] = "absent" }),
		"relative folder": edit(func(p *pending) { p.Writable = []string{"tmp"} }),
	}
	for name, data := range bad {
		if data == s {
			t.Fatalf("%s: the test's replacement did not apply", name)
		}
		if _, err := g.Resume([]byte(data)); !errors.Is(err, ErrBadPending) {
			t.Errorf("%s: accepted (err %v)", name, err)
		}
	}
}
