package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// proc names one process for its whole life: a pid with its start time, so that a pid reused by a
// later process is not taken for the one we watch.
type proc struct {
	pid   int
	start uint64 // clock ticks after boot, field 22 of /proc/PID/stat
}

type procStat struct {
	state byte
	ppid  int
	start uint64
}

// readStat parses /proc/PID/stat; the command name may hold spaces and parentheses, so fields are
// counted from the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat of pid %d: no ')' in %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("stat of pid %d: %d fields after the name, want at least 20", pid, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("stat of pid %d: ppid %q: %w", pid, f[1], err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat of pid %d: start time %q: %w", pid, f[19], err)
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, nil
}

// alive reports whether the process still runs: it exists, is the same process, and is not a zombie.
func (p proc) alive() bool {
	st, err := readStat(p.pid)
	return err == nil && st.start == p.start && st.state != 'Z' && st.state != 'X'
}

// pids lists the pids in /proc (thread-group leaders only).
func pids() []int {
	ents, _ := os.ReadDir("/proc")
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// descendants returns every living process under root (not root itself), but for sessions' network holders: a
// holder lives as long as its session and is not a command's (the commands under it are listed).
func descendants(root int) []proc {
	children := map[int][]proc{}
	for _, pid := range pids() {
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			continue
		}
		children[st.ppid] = append(children[st.ppid], proc{pid: pid, start: st.start})
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			if !isHolder(c.pid) {
				out = append(out, c)
			}
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// isHolder reports whether pid is a session's network holder (the sandbox helper's "holder" stage).
func isHolder(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && strings.Contains(string(b), "__garuda-sandbox-helper\x00holder")
}

// childWithExe returns the child of parent whose executable is exe (an absolute, resolved path).
func childWithExe(parent int, exe string) (proc, bool) {
	for _, pid := range pids() {
		st, err := readStat(pid)
		if err != nil || st.ppid != parent {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); err == nil && target == exe {
			return proc{pid: pid, start: st.start}, true
		}
	}
	return proc{}, false
}

// withMarker returns the living processes whose command line contains marker.
func withMarker(marker string) []proc {
	var out []proc
	for _, pid := range pids() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil || !bytes.Contains(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), []byte(marker)) {
			continue
		}
		if st, err := readStat(pid); err == nil && st.state != 'Z' && st.state != 'X' {
			out = append(out, proc{pid: pid, start: st.start})
		}
	}
	return out
}

// vmHWM returns the peak resident set size of pid in bytes (VmHWM in /proc/PID/status).
func vmHWM(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

// rssAnon returns the anonymous resident memory of pid in bytes now (RssAnon: heap, stacks; not the
// pages of the executable, which RssFile counts and other processes running it share).
func rssAnon(pid int) (int64, error) { return statusBytes(pid, "RssAnon") }

// statusBytes reads a "Key:   N kB" line of /proc/PID/status.
func statusBytes(pid int, key string) (int64, error) {
	return procBytes(fmt.Sprintf("/proc/%d/status", pid), key)
}

// procBytes reads a "Key:   N kB" line of a /proc file (status, smaps_rollup).
func procBytes(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("%s: %s %q", path, key, rest)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s %q: %w", path, key, rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}
