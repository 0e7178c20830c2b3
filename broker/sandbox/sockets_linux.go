// The host's pathname unix sockets, found through /proc in every network namespace, which a command must not reach.

package sandbox

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// coveredSockets lists the host's pathname unix sockets the command must not reach: all but the proxy's, which is
// the one host socket pid 1 reaches (the command may too: it is the same proxy).
func coveredSockets(proxy string) []string {
	return slices.DeleteFunc(hostUnixSockets(), func(p string) bool { return proxy != "" && filepath.Clean(p) == proxy })
}

// hostUnixSockets lists the pathname unix sockets bound in every network namespace this user can see: a socket of
// another namespace is reachable by its path all the same. A name bound relative to the binder's working folder is
// looked for in the working folder of each process holding the socket. Defends against a command talking to host
// daemons through sockets the broker's own namespace does not list.
func hostUnixSockets() []string {
	seen := map[string]bool{}
	var out []string
	relative := map[string]string{} // socket inode -> relative name
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, table := range unixSocketTables() {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 8 || fields[0] == "Num" || strings.HasPrefix(fields[7], "@") {
				continue
			}
			if name := fields[7]; strings.HasPrefix(name, "/") {
				add(name)
			} else {
				relative[fields[6]] = name
			}
		}
		f.Close()
	}
	if len(relative) > 0 {
		for _, p := range relativeSocketPaths(relative) {
			add(p)
		}
	}
	return out
}

// unixSocketTables names /proc/<pid>/net/unix of one process in each network namespace visible in /proc. It runs
// for every command, over every process of the machine: one directory read and one readlinkat each, nothing more.
func unixSocketTables() []string {
	tables := []string{"/proc/self/net/unix"}
	proc, err := os.Open("/proc")
	if err != nil {
		return tables
	}
	defer proc.Close()
	names, _ := proc.Readdirnames(-1)
	var buf [64]byte
	link := func(path string) string {
		n, err := unix.Readlinkat(int(proc.Fd()), path, buf[:])
		if err != nil {
			return ""
		}
		return string(buf[:n])
	}
	seen := map[string]bool{link("self/ns/net"): true}
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		ns := link(name + "/ns/net")
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		tables = append(tables, "/proc/"+name+"/net/unix")
	}
	return tables
}

// relativeSocketPaths finds, for sockets bound by a relative name (keyed by socket inode), the processes holding
// them and returns each name joined to the holder's working folder where a socket is found there.
func relativeSocketPaths(names map[string]string) []string {
	var out []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		l, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(l, "socket:[") {
			continue
		}
		name, ok := names[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")]
		if !ok {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(fd, "..", "..", "cwd"))
		if err != nil {
			continue
		}
		p := filepath.Join(cwd, name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			out = append(out, p)
		}
	}
	return out
}
