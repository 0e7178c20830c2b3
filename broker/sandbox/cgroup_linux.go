package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/garuda-dev/garuda/internal/pathglob"
	"golang.org/x/sys/unix"
)

// mechanism is what enforces a limit.
type mechanism int

const (
	byRlimit   mechanism = iota // RLIMIT_DATA / RLIMIT_NPROC set in the helper
	byCgroupV1                  // a cgroup v1 hierarchy of the controller (as root)
	byCgroupV2                  // the cgroup v2 controller, in the cgroup delegated to the broker
)

// limitMechanisms says how memory and processes are limited here, and why a cgroup is not used where it is not.
type limitMechanisms struct {
	memory, pids    mechanism
	v2Dir           string // the broker's cgroup v2 folder when byCgroupV2
	memWhy, pidsWhy string // why not a cgroup ("" when one is used)
}

// chooseMechanisms picks, for each limit, the cgroup v2 controller where it is delegated to the broker, else the
// cgroup v1 hierarchy as root, else a resource limit (which, for processes, root does not obey: the caller fails
// closed then). With v2 false the cgroup v2 controllers are passed over (they failed: v2err says why).
func chooseMechanisms(v2 bool, v2err error) limitMechanisms {
	var m limitMechanisms
	groups, err := ownCgroups()
	if err != nil {
		m.memWhy, m.pidsWhy = err.Error(), err.Error()
		return m
	}
	if v2err == nil {
		v2err = errors.New("not used")
	}
	if v2 {
		var dir string
		if dir, v2err = delegatedV2(groups); v2err == nil {
			m.memory, m.pids, m.v2Dir = byCgroupV2, byCgroupV2, dir
			return m
		}
	}
	for _, c := range []struct {
		name string
		mech *mechanism
		why  *string
	}{{"memory", &m.memory, &m.memWhy}, {"pids", &m.pids, &m.pidsWhy}} {
		if os.Geteuid() != 0 {
			*c.why = "not root, and no cgroup v2 " + c.name + " controller delegated to the broker (" + v2err.Error() + ")"
			continue
		}
		if _, err := v1Dir(groups, c.name); err != nil {
			*c.why = err.Error() + "; cgroup v2: " + v2err.Error()
			continue
		}
		*c.mech = byCgroupV1
	}
	return m
}

// cgroupMount is a mounted cgroup hierarchy: where, which folder of the hierarchy it shows, and its controllers.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers []string // v1 only
}

// ownCgroups reads this process's cgroups: v1 controller name -> path, and "" -> the v2 path.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// cgroupMounts lists the cgroup hierarchies mounted in this mount namespace. Each command looks them up several
// times; one reading serves for mountsFresh (cgroup hierarchies are mounted at boot, and a stale answer only
// makes a cgroup fail to be made, which fails closed).
func cgroupMounts() []cgroupMount {
	mountsCache.Lock()
	defer mountsCache.Unlock()
	if now := time.Now(); mountsCache.at.IsZero() || now.Sub(mountsCache.at) > mountsFresh {
		mountsCache.mounts, mountsCache.at = readCgroupMounts(), now
	}
	return mountsCache.mounts
}

const mountsFresh = 2 * time.Second

var mountsCache struct {
	sync.Mutex
	at     time.Time
	mounts []cgroupMount
}

func readCgroupMounts() []cgroupMount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []cgroupMount
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{point: unescapeMountinfo(f[4]), root: unescapeMountinfo(f[3])}
		switch g[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			m.controllers = strings.Split(g[2], ",")
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// folder is where the cgroup at path (as /proc/self/cgroup names it) is in this mount, or false when the mount
// does not show it.
func (m cgroupMount) folder(path string) (string, bool) {
	rel, in := pathglob.Within(m.root, path)
	if !in {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

// v1Dir is the folder of this process's cgroup in the v1 hierarchy of controller.
func v1Dir(groups map[string]string, controller string) (string, error) {
	path, ok := groups[controller]
	if !ok {
		return "", fmt.Errorf("no cgroup v1 %s controller", controller)
	}
	for _, m := range cgroupMounts() {
		if !m.v2 && slices.Contains(m.controllers, controller) {
			if dir, ok := m.folder(path); ok {
				return dir, nil
			}
		}
	}
	return "", fmt.Errorf("the cgroup v1 %s hierarchy is not mounted here", controller)
}

// delegatedV2 is this process's cgroup v2 folder when it may make child groups with the memory and pids
// controllers: both are available to it and it may write its own cgroup files (the cgroup was delegated).
func delegatedV2(groups map[string]string) (string, error) {
	path, ok := groups[""]
	if !ok {
		return "", errors.New("not in a cgroup v2 hierarchy")
	}
	for _, m := range cgroupMounts() {
		if !m.v2 {
			continue
		}
		dir, ok := m.folder(path)
		if !ok {
			continue
		}
		// Moved by v2Parent into the leaf "broker" of its delegated cgroup already: that cgroup is the one to use.
		if up := filepath.Dir(dir); filepath.Base(dir) == v2Leaf && hasControllers(filepath.Join(up, "cgroup.subtree_control")) {
			return up, nil
		}
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", filepath.Join(dir, "cgroup.controllers"), err)
		}
		have := strings.Fields(string(b))
		for _, c := range []string{"memory", "pids"} {
			if !slices.Contains(have, c) {
				return "", fmt.Errorf("the %s controller is not available in %s", c, dir)
			}
		}
		for _, f := range []string{"cgroup.procs", "cgroup.subtree_control"} {
			if err := unix.Access(filepath.Join(dir, f), unix.W_OK); err != nil {
				return "", fmt.Errorf("%s is not delegated to this user (%s: %w)", dir, f, err)
			}
		}
		// A cgroup with processes cannot hand controllers to children: the broker must be alone in it (it then
		// moves itself into a leaf), never sharing it with, say, the editor that started it.
		procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", filepath.Join(dir, "cgroup.procs"), err)
		}
		self := strconv.Itoa(os.Getpid())
		if others := slices.DeleteFunc(strings.Fields(string(procs)), func(p string) bool { return p == self }); len(others) > 0 {
			return "", fmt.Errorf("the broker shares its cgroup %s with %d other processes", dir, len(others))
		}
		return dir, nil
	}
	return "", errors.New("the cgroup v2 hierarchy is not mounted here")
}

// v2Leaf is the child of its delegated cgroup v2 that the broker moves itself into.
const v2Leaf = "broker"

// hasControllers reports whether a cgroup.subtree_control file enables memory and pids.
func hasControllers(subtreeControl string) bool {
	b, err := os.ReadFile(subtreeControl)
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return slices.Contains(f, "memory") && slices.Contains(f, "pids") && unix.Access(subtreeControl, unix.W_OK) == nil
}

// commandCgroup holds one command: a folder in each cgroup v1 hierarchy used (memory, pids), or one cgroup v2
// folder. Every command of this user sits below one parent ("garuda/u<uid>") whose memory limit bounds all of
// them together; the broker stays outside, so the kernel's OOM killer chooses among commands only.
type commandCgroup struct {
	dirs      []string // the command's folders
	mem, pids string   // the folder holding the memory / pids files; "" when that limit is not a cgroup's
	v2        bool
	memLimit  int64
	pidsLimit int
}

var cgroupSeq atomic.Uint64

// newCommandCgroup makes the cgroups of one command for the limits m enforces by a cgroup. It returns nil with no
// error when no limit is a cgroup's.
func newCommandCgroup(m limitMechanisms, memBytes int64, procs int) (*commandCgroup, error) {
	cg := &commandCgroup{memLimit: memBytes, pidsLimit: procs}
	name := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(cgroupSeq.Add(1), 10)
	user := "u" + strconv.Itoa(os.Geteuid())
	if m.memory == byCgroupV2 {
		cg.v2 = true
		parent, err := v2Parent(m.v2Dir, user)
		if err != nil {
			return nil, err
		}
		if err := writeCgroupFile(parent, "memory.max", strconv.FormatInt(memBytes, 10)); err != nil {
			return nil, err
		}
		_ = writeCgroupFile(parent, "memory.swap.max", "0") // absent without swap accounting
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		cg.dirs, cg.mem, cg.pids = []string{dir}, dir, dir
		for _, kv := range [][2]string{{"memory.max", strconv.FormatInt(memBytes, 10)}, {"memory.swap.max", "0"},
			{"memory.oom.group", "0"}, {"pids.max", strconv.Itoa(procs)}} {
			if err := writeCgroupFile(dir, kv[0], kv[1]); err != nil && kv[0] != "memory.swap.max" {
				cg.remove()
				return nil, err
			}
		}
		return cg, nil
	}
	groups, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	for _, c := range []struct {
		controller string
		use        bool
		dst        *string
	}{{"memory", m.memory == byCgroupV1, &cg.mem}, {"pids", m.pids == byCgroupV1, &cg.pids}} {
		if !c.use {
			continue
		}
		base, err := v1Dir(groups, c.controller)
		if err != nil {
			cg.remove()
			return nil, err
		}
		dir, err := v1Group(base, user, name, c.controller == "memory", memBytes)
		if err != nil {
			cg.remove()
			return nil, err
		}
		cg.dirs = append(cg.dirs, dir)
		*c.dst = dir
		if c.controller == "memory" {
			err = setV1Memory(dir, memBytes)
		} else {
			err = writeCgroupFile(dir, "pids.max", strconv.Itoa(procs))
		}
		if err != nil {
			cg.remove()
			return nil, err
		}
	}
	if len(cg.dirs) == 0 {
		return nil, nil
	}
	return cg, nil
}

// v1Group makes the command's group name in the user's parent below base (garuda/<user>/<name>), then sets the
// parent's memory limit when memory is true. A parent another command's end removed as it emptied is made again;
// once the group exists it pins its parent, so the limit is written to the folder that stays.
func v1Group(base, user, name string, memory bool, memBytes int64) (string, error) {
	parent := filepath.Join(base, "garuda", user)
	sweepStaleCgroups(filepath.Join(base, "garuda")) // groups of the layout before the per-user parent
	dir := filepath.Join(parent, name)
	for try := 0; ; try++ {
		err := os.MkdirAll(parent, 0o755)
		if err == nil {
			sweepStaleCgroups(parent)
			if err = os.Mkdir(dir, 0o755); err == nil {
				break
			}
		}
		// A folder removed between MkdirAll's steps or before the group's mkdir answers ENOENT or EEXIST.
		if !(errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrExist)) || try >= v1Tries {
			return "", fmt.Errorf("create cgroup %s: %w", dir, err)
		}
	}
	if memory {
		// EBUSY: the user's commands already hold more than memBytes, under another broker's higher limit (another
		// editor, another team policy). Lowering the shared limit now would fail every command of the user; the
		// command still gets its own group's limit, which defends against it taking more than memBytes.
		if err := setV1Memory(parent, memBytes); err != nil && !errors.Is(err, unix.EBUSY) {
			_ = os.Remove(dir)
			return "", err
		}
	}
	return dir, nil
}

// v1Tries bounds how often v1Group remakes a parent that other commands' ends keep removing. Defends against
// failing a command because another command of the same user ended at the same moment.
const v1Tries = 20

// v2Parent makes the user's parent group in the broker's delegated cgroup v2 folder. A cgroup with processes
// cannot hand controllers to its children, so the broker first moves itself into a leaf of its own ("broker").
func v2Parent(own, user string) (string, error) {
	ctl := filepath.Join(own, "cgroup.subtree_control")
	if err := os.WriteFile(ctl, []byte("+memory +pids"), 0o644); err != nil {
		leaf := filepath.Join(own, v2Leaf)
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create cgroup %s: %w", leaf, err)
		}
		if err := writeCgroupFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			return "", err
		}
		if err := os.WriteFile(ctl, []byte("+memory +pids"), 0o644); err != nil {
			return "", fmt.Errorf("enable memory and pids in %s: %w", ctl, err)
		}
	}
	parent := filepath.Join(own, "garuda-"+user)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("create cgroup %s: %w", parent, err)
	}
	if err := writeCgroupFile(parent, "cgroup.subtree_control", "+memory +pids"); err != nil {
		return "", err
	}
	sweepStaleCgroups(parent)
	return parent, nil
}

func writeCgroupFile(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("set %s in %s to %s: %w", name, dir, value, err)
	}
	return nil
}

// setV1Memory sets a v1 memory group's limit, with swap included where swap is accounted (so that swapping out is
// no way past it). The memory+swap limit may never be below the memory limit: raising it goes first.
func setV1Memory(dir string, n int64) error {
	v := strconv.FormatInt(n, 10)
	err := writeCgroupFile(dir, "memory.limit_in_bytes", v)
	if _, serr := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); serr == nil {
		if serr := writeCgroupFile(dir, "memory.memsw.limit_in_bytes", v); serr != nil && err == nil {
			return serr
		}
		if err != nil {
			err = writeCgroupFile(dir, "memory.limit_in_bytes", v)
		}
	}
	return err
}

// staleCgroupAge is how old an empty group must be before another broker may sweep it.
const staleCgroupAge = time.Minute

// sweepStaleCgroups removes the empty groups left by brokers that died before cleaning up (named <pid>-<n>). Only
// groups older than staleCgroupAge: defends against removing another live broker's group in the moment between
// its mkdir and its helper joining it, when that broker's pid looks dead from here (another pid namespace). A
// parent is swept at most once per staleCgroupAge: nothing younger would be removed anyway.
func sweepStaleCgroups(parent string) {
	sweeps.Lock()
	if last, ok := sweeps.at[parent]; ok && time.Since(last) < staleCgroupAge {
		sweeps.Unlock()
		return
	}
	if sweeps.at == nil {
		sweeps.at = map[string]time.Time{}
	}
	sweeps.at[parent] = time.Now()
	sweeps.Unlock()
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		pidStr, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || !e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < staleCgroupAge {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			_ = os.Remove(filepath.Join(parent, e.Name())) // fails, harmlessly, if tasks remain
		}
	}
}

var sweeps struct {
	sync.Mutex
	at map[string]time.Time
}

// add puts the helper in every folder of the command.
func (c *commandCgroup) add(pid int) error {
	for _, d := range c.dirs {
		if err := writeCgroupFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("put sandbox helper %d in its cgroup: %w", pid, err)
		}
	}
	return nil
}

// tasksFiles are the tasks files of the command's cgroup v1 groups.
func (c *commandCgroup) tasksFiles() []string {
	var out []string
	for _, d := range c.dirs {
		out = append(out, filepath.Join(d, "tasks"))
	}
	return out
}

// hit names, in words, the limits the command reached: a process the kernel killed for memory, a fork refused
// at the process limit.
func (c *commandCgroup) hit() []string {
	var out []string
	if c.mem != "" {
		file, key := "memory.oom_control", "oom_kill"
		if c.v2 {
			file = "memory.events"
		}
		if n := cgroupCounter(filepath.Join(c.mem, file), key); n > 0 {
			out = append(out, fmt.Sprintf("memory limit reached (%d MiB for each command and for all of this user's "+
				"commands together; limits.memory_mb): the kernel killed %s of the command", c.memLimit>>20, plural(n, "process")))
		}
	}
	if c.pids != "" {
		if n := cgroupCounter(filepath.Join(c.pids, "pids.events"), "max"); n > 0 {
			out = append(out, fmt.Sprintf("process limit reached (%d processes and threads; limits.processes): %s refused",
				c.pidsLimit, plural(n, "fork")))
		}
	}
	return out
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "s") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// cgroupCounter reads "key N" from a flat-keyed cgroup file (0 when absent).
func cgroupCounter(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove removes the command's groups, then (v1) the user's parent and the garuda folder if no other command
// runs there (removal fails, harmlessly, while they hold groups; a broker starting a command remakes them).
func (c *commandCgroup) remove() {
	for _, d := range c.dirs {
		for i := 0; i < 50; i++ {
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(2 * time.Millisecond) // the last tasks of a dead namespace may still be leaving the group
		}
		if !c.v2 { // a v2 parent stays in the broker's own cgroup, which ends with it
			_ = os.Remove(filepath.Dir(d))
			_ = os.Remove(filepath.Dir(filepath.Dir(d)))
		}
	}
}
