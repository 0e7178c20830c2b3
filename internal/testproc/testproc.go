// Package testproc finds processes by what they run, for the tests that check that nothing is left running: a
// command's marker in its command line, or a binary by its path. Output holds what a process writes while a test
// reads it.
package testproc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Proc is one process as /proc shows it.
type Proc struct {
	PID     int
	Cmdline string // its arguments joined by single spaces
	Zombie  bool   // it ended and waits to be reaped
}

func (p Proc) String() string { return strconv.Itoa(p.PID) + ": " + p.Cmdline }

// Holding lists the processes whose command line (arguments joined by spaces) holds s, zombies included.
func Holding(s string) []Proc {
	var out []Proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(bytes.TrimRight(data, "\x00")), "\x00", " ")
		if !strings.Contains(cmdline, s) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		out = append(out, Proc{PID: pid, Cmdline: cmdline, Zombie: bytes.Contains(st, []byte(") Z "))})
	}
	return out
}

// Live is Holding without the zombies.
func Live(s string) []Proc {
	var out []Proc
	for _, p := range Holding(s) {
		if !p.Zombie {
			out = append(out, p)
		}
	}
	return out
}

// OfExe lists the pids whose executable is path (also after the file was deleted or replaced).
func OfExe(path string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.TrimSuffix(exe, " (deleted)") == path {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitLive waits until, for each of markers, a live process's command line holds it; it fails t after within.
func WaitLive(t testing.TB, within time.Duration, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, m := range markers {
		for len(Live(m)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no process of %q ran within %v", m, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// WaitNoneLive waits until no live process's command line holds marker; it fails t after within.
func WaitNoneLive(t testing.TB, within time.Duration, marker string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := Live(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %q still running after %v: %v", marker, within, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitExeGone waits until no process runs the binary path; it fails t after within.
func WaitExeGone(t testing.TB, within time.Duration, path string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := OfExe(path)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s still running after %v: %v", filepath.Base(path), within, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
