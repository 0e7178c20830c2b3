package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelCall makes a syscall of the kernel's attack surface with arguments that change nothing outside the process.
func kernelCall(name string) unix.Errno {
	var e unix.Errno
	switch name {
	case "userfaultfd":
		var fd uintptr
		fd, _, e = unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|1 /* UFFD_USER_MODE_ONLY */, 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
	case "perf_event_open":
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK, Bits: unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		e, _ = err.(unix.Errno)
	case "bpf":
		var attr [128]byte
		_, _, e = unix.Syscall(unix.SYS_BPF, 0 /* BPF_MAP_CREATE */, uintptr(unsafe.Pointer(&attr[0])), uintptr(len(attr)))
	case "keyctl":
		_, _, e = unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffe) /* process keyring */, 1)
	case "add_key":
		_, err := unix.AddKey("user", "garuda-redteam", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		e, _ = err.(unix.Errno)
	case "process_vm_readv":
		src, dst := []byte("x"), make([]byte, 1)
		_, err := unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &dst[0], Len: 1}}, []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 1}}, 0)
		e, _ = err.(unix.Errno)
	case "open_by_handle_at": // the "shocker" escape: open a file by handle, past every path check
		h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, "/", 0)
		if err != nil {
			return err.(unix.Errno)
		}
		fd, err := unix.OpenByHandleAt(unix.AT_FDCWD, h, unix.O_RDONLY)
		if err == nil {
			unix.Close(fd)
		}
		e, _ = err.(unix.Errno)
	case "setns":
		fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err.(unix.Errno)
		}
		defer unix.Close(fd)
		runtime.LockOSThread() // the thread may end up in the same namespace it was in: nothing changes
		e = unixErrno(unix.Setns(fd, unix.CLONE_NEWNET))
	case "mount":
		e = unixErrno(unix.Mount("none", "/nonexistent-garuda", "tmpfs", 0, ""))
	case "unshare-userns":
		runtime.LockOSThread() // never unlocked: the thread dies with the process
		e = unixErrno(unix.Unshare(unix.CLONE_NEWUSER))
	default:
		return unix.ENOSYS
	}
	return e
}

func unixErrno(err error) unix.Errno {
	e, _ := err.(unix.Errno)
	return e
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// inNewNetNS wraps argv to run in a network namespace of its own (with a user namespace when not root): what a
// network namespace alone gives, without the rest of the sandbox.
func inNewNetNS(argv ...string) *exec.Cmd {
	pre := []string{"--net"}
	if !isRoot() {
		pre = append(pre, "--map-root-user")
	}
	return exec.Command("unshare", append(pre, argv...)...)
}

// TestAttackMoreVsock: AF_VSOCK is not isolated by a network namespace (it reaches the hypervisor, CID 2, and
// every vsock service of this machine); the seccomp filter refuses the family.
func TestAttackMoreVsock(t *testing.T) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Skipf("no vsock on this machine: %v", err)
	}
	defer unix.Close(fd)
	port := 0
	for p := 40000 + os.Getpid()%20000; p < 65000; p++ {
		if unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: uint32(p)}) == nil {
			port = p
			break
		}
	}
	if port == 0 {
		t.Fatal("no free vsock port")
	}
	must(t, unix.Listen(fd, 1))
	f := newFixture(t)
	exe, err := os.Executable()
	must(t, err)
	expectDenied(t, "vsock from the sandbox", f.sandboxed(attackCmd(t, "vsock-bind", strconv.Itoa(port))))
	// Negative control: a network namespace alone shares the host's vsock ports.
	o, err := inNewNetNS(exe, attackArg, "vsock-bind", strconv.Itoa(port)).CombinedOutput()
	if err != nil || !strings.Contains(string(o), "in use") {
		t.Errorf("negative control: vsock in a bare network namespace: %v %q", err, o)
	}
}

// TestAttackMoreSocketFamilies: of the address families, only those a network namespace isolates are allowed.
func TestAttackMoreSocketFamilies(t *testing.T) {
	f := newFixture(t)
	for _, fam := range []int{unix.AF_VSOCK, unix.AF_ALG, unix.AF_TIPC, unix.AF_RDS, unix.AF_KCM, unix.AF_QIPCRTR, unix.AF_XDP} {
		r := f.sandboxed(attackCmd(t, "socket", strconv.Itoa(fam), strconv.Itoa(unix.SOCK_SEQPACKET)))
		if !strings.Contains(out(r), "DENIED operation not permitted") {
			t.Errorf("socket family %d in the sandbox: not refused by seccomp: %q", fam, r.Output)
		}
	}
	// Everyday families still work: unix, IPv4, IPv6, netlink (ip, getaddrinfo).
	for _, c := range [][2]int{{unix.AF_UNIX, unix.SOCK_STREAM}, {unix.AF_INET, unix.SOCK_STREAM}, {unix.AF_INET6, unix.SOCK_DGRAM}, {unix.AF_NETLINK, unix.SOCK_RAW}} {
		r := f.sandboxed(attackCmd(t, "socket", strconv.Itoa(c[0]), strconv.Itoa(c[1])))
		if r.ExitCode != 0 {
			t.Errorf("socket family %d in the sandbox: %q", c[0], r.Output)
		}
	}
	// Negative control: without the filter the kernel creates an AF_VSOCK socket.
	if fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0); err == nil {
		unix.Close(fd)
		expectWorked(t, "AF_VSOCK socket", f.unsandboxed(attackCmd(t, "socket", strconv.Itoa(unix.AF_VSOCK), strconv.Itoa(unix.SOCK_STREAM))))
	}
}

func TestSeccompSocketFamilyDecisions(t *testing.T) {
	if !seccompArchSupported {
		t.Skip("no seccomp table for this architecture")
	}
	arch := uint32(seccompArch)
	for _, onlyUnix := range []bool{false, true} {
		for _, fam := range []uint64{unix.AF_VSOCK, unix.AF_ALG, unix.AF_PACKET, unix.AF_BLUETOOTH, unix.AF_VSOCK | 1<<32} {
			if v := seccompVerdict(t, onlyUnix, arch, unix.SYS_SOCKET, fam); v != retEPERM {
				t.Errorf("socket(%d) (only unix %v): verdict %#x, want EPERM", fam, onlyUnix, v)
			}
		}
	}
	for _, fam := range []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK} {
		if v := seccompVerdict(t, false, arch, unix.SYS_SOCKET, fam); v != retAllow {
			t.Errorf("socket(%d): verdict %#x, want allow", fam, v)
		}
	}
}

// TestAttackMoreMetadataOutsideRoot: Landlock does not cover chmod, utimes or extended attributes; outside the
// writable places every mount is read-only, so none of them changes a file there.
func TestAttackMoreMetadataOutsideRoot(t *testing.T) {
	f := newFixture(t)
	victim := filepath.Join(f.outside, "victim")
	must(t, os.WriteFile(victim, []byte("v"), 0o600))
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	before, err := os.Stat(victim)
	must(t, err)
	attacks := map[string]string{
		"chmod a file":      "chmod 0666 " + shq(victim),
		"chmod a folder":    "chmod 0777 " + shq(f.outside),
		"chmod the home":    "chmod 0777 " + shq(f.home),
		"set times":         "touch -d 2001-01-01 " + shq(victim),
		"set an xattr":      attackCmd(t, "setxattr", victim),
		"chmod in /tmp":     "chmod 0777 " + shq(f.base),
		"chmod in the root": "chmod 0700 . && chmod 0755 .", // the root itself stays writable
	}
	for name, cmd := range attacks {
		r := f.sandboxed(cmd)
		if name == "chmod in the root" {
			if r.ExitCode != 0 {
				t.Errorf("%s: %q", name, r.Output)
			}
			continue
		}
		expectDenied(t, name, r)
	}
	after, err := os.Stat(victim)
	must(t, err)
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("victim changed from the sandbox: mode %v -> %v, mtime %v -> %v", before.Mode(), after.Mode(), before.ModTime(), after.ModTime())
	}
	for _, d := range []string{f.outside, f.home, f.base} {
		if fi, _ := os.Stat(d); fi.Mode().Perm() == 0o777 {
			t.Errorf("%s made world-writable from the sandbox", d)
		}
	}
	if n, _ := unix.Getxattr(victim, "user.garuda", make([]byte, 16)); n > 0 {
		t.Errorf("xattr set on the victim from the sandbox")
	}
	// Negative control: without the sandbox each works.
	for _, name := range []string{"chmod a file", "set times", "set an xattr"} {
		expectWorked(t, name, f.unsandboxed(attacks[name]))
	}
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o666 || !fi.ModTime().Equal(old) {
		t.Errorf("negative control: mode %v mtime %v", fi.Mode(), fi.ModTime())
	}
}

// TestAttackMoreDeviceNodes: Landlock lets a command read every device node (raw disks, consoles, other users'
// terminals, a node planted anywhere); only null, zero, full, random, urandom and tty can be opened.
func TestAttackMoreDeviceNodes(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed("cat /dev/null; head -c1 /dev/zero >/dev/null && head -c1 /dev/urandom >/dev/null && head -c1 /dev/random >/dev/null && echo x > /dev/full; echo done")
	if out(r) != "bash: line 1: echo: write error: No space left on device\ndone" {
		t.Errorf("everyday devices: %q", r.Output)
	}
	if isRoot() {
		// A node outside /dev (as in a container's root file system), of a device that is not on the list.
		node := filepath.Join(f.outside, "vcs")
		must(t, unix.Mknod(node, unix.S_IFCHR|0o600, int(unix.Mkdev(7, 0))))
		expectDenied(t, "open a planted device node", f.sandboxed(attackCmd(t, "open-read", node)))
		expectWorked(t, "open a planted device node", f.unsandboxed(attackCmd(t, "open-read", node)))
	}
	// Host devices this user may open: the console's screen for root, a terminal or a disk for a user in tty or disk.
	tried := 0
	for _, dev := range []string{"/dev/vcs", "/dev/vcsa", "/dev/tty1", "/dev/console", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/kmsg"} {
		if unix.Access(dev, unix.R_OK) != nil {
			continue
		}
		if r := f.unsandboxed(attackCmd(t, "open-read", dev)); r.ExitCode != 0 {
			continue // the kernel refuses it anyway (a busy disk, dmesg_restrict)
		}
		tried++
		expectDenied(t, "open "+dev, f.sandboxed(attackCmd(t, "open-read", dev)))
	}
	t.Logf("%d host devices opened without the sandbox and tried in it", tried)
}

// TestAttackMoreSysctlWrite: uid 0 without capabilities may write sysctls (hostname, core_pattern) as far as file
// permissions go; Landlock and the read-only /proc keep them unchanged.
func TestAttackMoreSysctlWrite(t *testing.T) {
	if !isRoot() {
		t.Skip("sysctls are root's: nothing to write as another user")
	}
	f := newFixture(t)
	h, _ := os.Hostname()
	expectDenied(t, "write kernel.hostname", f.sandboxed("echo garuda-pwned > /proc/sys/kernel/hostname"))
	if h2, _ := os.Hostname(); h2 != h {
		t.Fatalf("hostname changed to %q", h2)
	}
	// Negative control, in a UTS namespace of its own: the file permissions let uid 0 write it.
	expectWorked(t, "write kernel.hostname", f.unsandboxed("unshare --uts sh -c 'echo garuda-pwned > /proc/sys/kernel/hostname'"))
}

// TestAttackMoreHiddenParentRenamed: a hidden path cannot be renamed itself (a mount point), but its parent could be,
// and the next command's rule (naming the old path) would then not hide it. Every folder between a writable place
// and a hidden path is a mount point.
func TestAttackMoreHiddenParentRenamed(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "conf")
	must(t, os.MkdirAll(filepath.Join(conf, "keys"), 0o755))
	must(t, os.WriteFile(filepath.Join(conf, "secret.env"), []byte("SECRET-ENV"), 0o644))
	must(t, os.WriteFile(filepath.Join(conf, "keys", "k"), []byte("SECRET-KEY"), 0o644))
	spec := func(cmd string) Spec {
		s := f.spec(cmd)
		s.Hidden = append(s.Hidden, filepath.Join(conf, "secret.env"), filepath.Join(conf, "keys")) // read-deny rules
		return s
	}
	read := "cat conf/secret.env conf/keys/k conf2/secret.env conf2/keys/k 2>/dev/null"
	if r := f.run(spec(read)); strings.Contains(string(r.Output), "SECRET") {
		t.Fatalf("hidden files read: %q", r.Output)
	}
	f.run(spec("mv conf conf2 || { mkdir x && mv conf x/; }"))
	if r := f.run(spec(read + "; cat x/conf/secret.env x/conf/keys/k")); strings.Contains(string(r.Output), "SECRET") {
		t.Errorf("hidden files read after their folder was renamed in the sandbox: %q", r.Output)
	}
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("the hidden files' folder was renamed: %v", err)
	}
	// Negative control: had the folder been renamed, the same rules would not hide the files.
	expectWorked(t, "rename", f.unsandboxed("rm -rf x conf2; mv conf conf2"))
	if r := f.run(spec(read)); !strings.Contains(string(r.Output), "SECRET-ENV") {
		t.Errorf("negative control: renamed hidden file not read: %q", r.Output)
	}
}

// unixListener starts the attack tool listening on the unix socket path (from dir when relative) through wrap.
func unixListener(t *testing.T, dir, path string, wrap func(argv ...string) *exec.Cmd) {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	c := wrap(exe, attackArg, "unix-listen", path)
	c.Dir = dir
	stdout, err := c.StdoutPipe()
	must(t, err)
	must(t, c.Start())
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.Contains(line, "listening") {
		t.Fatalf("listener on %s did not start: %q", path, line)
	}
	go io.Copy(io.Discard, stdout)
}

// TestAttackMoreUnixSocketsElsewhere: pathname sockets bound in another network namespace, or by a relative name,
// are reachable by their path like any other; they are covered too.
func TestAttackMoreUnixSocketsElsewhere(t *testing.T) {
	f := newFixture(t)
	dir, err := os.MkdirTemp("/tmp", "gs") // short: a socket's path has at most 107 bytes
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	other := filepath.Join(dir, "other-netns.sock")
	unixListener(t, dir, other, inNewNetNS)
	unixListener(t, dir, "relative.sock", func(argv ...string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) })
	for _, p := range []string{other, filepath.Join(dir, "relative.sock")} {
		expectDenied(t, "connect to "+filepath.Base(p), f.sandboxed(attackCmd(t, "unix", p)))
		expectWorked(t, "connect to "+filepath.Base(p), f.unsandboxed(attackCmd(t, "unix", p)))
	}
}

// TestAttackMoreInheritedFd: a descriptor the broker leaks (opened without close-on-exec) reaches the helper, but
// never the command.
func TestAttackMoreInheritedFd(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.garuda, "credentials")
	fd, err := unix.Open(secret, unix.O_RDONLY, 0) // no O_CLOEXEC: inherited by every child of this process
	must(t, err)
	defer unix.Close(fd)
	cmd := fmt.Sprintf("ls -l /proc/self/fd/; cat /proc/self/fd/%d <&%d", fd, fd)
	if r := f.sandboxed(cmd); strings.Contains(string(r.Output), "SECRET") || strings.Contains(string(r.Output), "credentials") {
		t.Errorf("the command inherited the broker's descriptor: %q", r.Output)
	}
	// Negative control: a child started without the helper's close-range inherits it.
	if o, _ := plain(t, cmd); !strings.Contains(o, "SECRET-CREDENTIALS") {
		t.Errorf("negative control: descriptor not inherited by a plain child: %q", o)
	}
}

// TestAttackMoreSignalInit: the command cannot stop, kill or signal its pid 1 (the helper that forwards cancel).
func TestAttackMoreSignalInit(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed("kill -STOP 1; kill -KILL 1; kill -TERM 1; sleep 0.1; " + attackCmd(t, "kill", "1") + "; echo still-here")
	if !strings.Contains(string(r.Output), "DENIED") || !strings.Contains(string(r.Output), "still-here") || r.ExitCode != 0 {
		t.Errorf("signals to pid 1: exit %d %q", r.ExitCode, r.Output)
	}
	// Negative control: outside the sandbox, the same user signals its own processes.
	sl := exec.Command("sleep", "60")
	must(t, sl.Start())
	defer func() { sl.Process.Kill(); sl.Wait() }()
	if o, err := plain(t, attackCmd(t, "kill", strconv.Itoa(sl.Process.Pid))); err != nil {
		t.Errorf("negative control: %v %q", err, o)
	}
}

// TestAttackMoreSecretsThroughAnotherMount: the same file system mounted a second time (WSL's /mnt/wslg/distro,
// ostree's /sysroot, a bind mount) shows hidden secrets and protected paths under a second name; they are hidden and
// read-only under every name.
func TestAttackMoreSecretsThroughAnotherMount(t *testing.T) {
	if !isRoot() {
		t.Skip("a second mount needs a mount namespace of its own, made as root")
	}
	f, s := gitFixture(t)
	must(t, EnsureProtectedDirs(f.root, s.EnsureDirs))
	alias := filepath.Join(t.TempDir(), "alias")
	must(t, os.Mkdir(alias, 0o755))
	second := func(p string) string { return filepath.Join(alias, strings.TrimPrefix(p, f.base)) }
	hook := filepath.Join(f.root, ".git", "hooks", "pre-commit")
	cmd := fmt.Sprintf("cat %s %s; echo pwned > %s; echo '[core] fsmonitor = x' >> %s; true",
		shq(second(filepath.Join(f.home, ".ssh", "id_ed25519"))), shq(second(filepath.Join(f.garuda, "credentials"))),
		shq(second(hook)), shq(second(filepath.Join(f.root, ".git", "config"))))
	exe, err := os.Executable()
	must(t, err)
	run := func(unsandboxed string) string { // "unsandboxed", or "" for a sandboxed run
		c := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$1" "$2" && shift 2 && exec "$@"`,
			"sh", f.base, alias, exe, attackArg, "broker", f.root, f.tmp, cmd, "hidden="+strings.Join(f.spec("").Hidden, ","),
			"readonly="+strings.Join(append(s.ReadOnly, s.EnsureDirs...), ","), unsandboxed)
		o, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("broker in a mount namespace with a second mount: %v %q", err, o)
		}
		return string(o)
	}
	cfg, _ := os.ReadFile(filepath.Join(f.root, ".git", "config"))
	if o := run(""); strings.Contains(o, "SECRET") {
		t.Errorf("secrets read through a second mount: %q", o)
	}
	if _, err := os.Stat(hook); err == nil {
		t.Errorf("hook written through a second mount")
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, ".git", "config")); string(b) != string(cfg) {
		t.Errorf(".git/config changed through a second mount")
	}
	// Negative control: without the sandbox the second mount shows and writes them.
	if o := run("unsandboxed"); !strings.Contains(o, "SECRET-SSH-KEY") || !strings.Contains(o, "SECRET-CREDENTIALS") {
		t.Errorf("negative control: the second mount did not show the secrets: %q", o)
	}
	if _, err := os.Stat(hook); err != nil {
		t.Errorf("negative control: hook not written through the second mount: %v", err)
	}
}

// TestSnapshotOpensNoFIFOOrSymlink: hashing a protected file follows no symlink and does not block on a FIFO (a
// command still running could swap the file for either between the listing and the open).
func TestSnapshotOpensNoFIFOOrSymlink(t *testing.T) {
	d := t.TempDir()
	fifo := filepath.Join(d, "fifo")
	must(t, unix.Mkfifo(fifo, 0o644))
	target := filepath.Join(d, "target")
	must(t, os.WriteFile(target, []byte("x"), 0o644))
	link := filepath.Join(d, "link")
	must(t, os.Symlink(target, link))
	done := make(chan string, 1)
	go func() { done <- hashFile(fifo) }()
	select {
	case h := <-done:
		if !strings.HasPrefix(h, "not a regular file") {
			t.Errorf("hash of a FIFO: %q", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hashing a FIFO blocked")
	}
	if h := hashFile(link); h == hashFile(target) {
		t.Errorf("hashing a symlink followed it")
	}
	// Negative control: a plain open of the FIFO blocks until a writer comes.
	opened := make(chan struct{})
	go func() {
		if f, err := os.Open(fifo); err == nil {
			f.Close()
		}
		close(opened)
	}()
	select {
	case <-opened:
		t.Error("negative control: a plain open of the FIFO did not block")
	case <-time.After(200 * time.Millisecond):
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // lets the blocked open return
	must(t, err)
	w.Close()
	<-opened
}

// TestEnsureDirsRaceWithSymlinkSwap: a command still running swaps a nested repository's .git for a symlink to
// outside the root, over and over, while the broker creates that repository's hooks folder for the next command;
// the folder is never created outside the root.
func TestEnsureDirsRaceWithSymlinkSwap(t *testing.T) {
	f := newFixture(t)
	gitDir := filepath.Join(f.root, "sub", ".git")
	must(t, os.MkdirAll(gitDir, 0o755))
	link := filepath.Join(f.root, "sub", "link")
	must(t, os.Symlink(f.outside, link))
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// .git is a folder, then the symlink, then the folder again: one atomic exchange each time.
			_ = unix.Renameat2(unix.AT_FDCWD, gitDir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	}()
	escaped := false
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !escaped {
		_ = EnsureProtectedDirs(f.root, []string{filepath.Join(gitDir, "hooks")})
		if _, err := os.Lstat(filepath.Join(f.outside, "hooks")); err == nil {
			escaped = true
		}
		os.Remove(filepath.Join(gitDir, "hooks"))
		os.Remove(filepath.Join(link, "hooks"))
	}
	close(stop)
	<-swapped
	if escaped {
		t.Fatal("the hooks folder was created outside the root through the swapped symlink")
	}
	// Negative control: a plain mkdir through the symlink lands outside.
	target := gitDir
	if fi, _ := os.Lstat(gitDir); fi.Mode()&os.ModeSymlink == 0 {
		target = link
	}
	must(t, os.Mkdir(filepath.Join(target, "hooks"), 0o755))
	if _, err := os.Stat(filepath.Join(f.outside, "hooks")); err != nil {
		t.Error("negative control: mkdir through the symlink did not land outside")
	}
}

// TestAttackMoreKernelSurface: each syscall of the kernel's attack surface (or a known escape) is refused by the
// filter with EPERM; without it the kernel answers otherwise (success, or its own refusal).
func TestAttackMoreKernelSurface(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"userfaultfd", "perf_event_open", "bpf", "keyctl", "add_key", "process_vm_readv", "open_by_handle_at", "setns", "mount", "unshare-userns"} {
		r := f.sandboxed(attackCmd(t, "syscall", name))
		if !strings.Contains(out(r), fmt.Sprintf("ERRNO %d ", unix.EPERM)) {
			t.Errorf("%s in the sandbox: %q", name, r.Output)
		}
		if u := out(f.unsandboxed(attackCmd(t, "syscall", name))); strings.Contains(u, fmt.Sprintf("ERRNO %d ", unix.EPERM)) {
			t.Logf("no negative control for %s: the kernel refuses it here without the filter too (%q)", name, u)
		} else {
			t.Logf("negative control %s: %s", name, strings.SplitN(u, "\n", 2)[0])
		}
	}
}

// TestAttackMoreCgroupEscape: a root command cannot move itself out of its pids cgroup or raise its pids.max.
func TestAttackMoreCgroupEscape(t *testing.T) {
	if !isRoot() {
		t.Skip("the pids cgroup is used only by a root broker")
	}
	f := newFixture(t)
	cmd := `g=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup); echo 100000 > /sys/fs/cgroup/pids$g/pids.max; echo $$ > /sys/fs/cgroup/pids/cgroup.procs; sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup`
	r := f.sandboxed(cmd)
	if !strings.Contains(out(r), "/garuda/") || strings.Count(out(r), "Read-only file system")+strings.Count(out(r), "Permission denied") < 2 {
		t.Errorf("cgroup escape from the sandbox: %q", r.Output)
	}
	// Negative control: without the sandbox, uid 0 moves a process of its own to the root pids cgroup.
	if r := f.unsandboxed(`echo $$ > /sys/fs/cgroup/pids/cgroup.procs && sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup`); out(r) != "/" {
		t.Errorf("negative control: %q", r.Output)
	}
}

// TestAttackMoreWriteElsewhere: no write outside the writable places by any other name of a folder (/proc/self/root,
// the init's /proc/1/cwd) nor in the host's shared temp and run folders or the home's caches.
func TestAttackMoreWriteElsewhere(t *testing.T) {
	f := newFixture(t)
	name := "garuda-redteam-" + strconv.Itoa(os.Getpid())
	targets := []string{
		"/proc/self/root" + filepath.Join(f.outside, name), "/proc/1/cwd/" + name, "/proc/1/root" + filepath.Join(f.outside, name),
		filepath.Join(f.home, ".cache", name), "/var/tmp/" + name, "/run/" + name, "/tmp/" + name,
	}
	must(t, os.MkdirAll(filepath.Join(f.home, ".cache"), 0o755))
	for _, p := range targets {
		expectDenied(t, "write "+p, f.sandboxed("echo x > "+shq(p)))
	}
	for _, p := range []string{filepath.Join(f.outside, name), filepath.Join(f.root, name), filepath.Join(f.home, ".cache", name), "/var/tmp/" + name, "/run/" + name, "/tmp/" + name} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s written from the sandbox", p)
			os.Remove(p)
		}
	}
	// Negative control: /proc/self/root reaches the outside folder without the sandbox.
	expectWorked(t, "write through /proc/self/root", f.unsandboxed("echo x > "+shq(targets[0])))
}

// TestAttackMoreIPv6Loopback: the host's IPv6 loopback is not the command's.
func TestAttackMoreIPv6Loopback(t *testing.T) {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer l.Close()
	go acceptAndClose(l)
	f := newFixture(t)
	expectDenied(t, "TCP to the host's ::1", f.sandboxed(attackCmd(t, "tcp", l.Addr().String())))
	expectWorked(t, "TCP to the host's ::1", f.unsandboxed(attackCmd(t, "tcp", l.Addr().String())))
}

// TestAttackMoreHostTerminals: a command gets terminals of its own (a devpts instance of the sandbox: script and
// expect work) but never the host's: a pty opened outside is not there to read or write, by its name or through the
// host's /dev/ptmx.
func TestAttackMoreHostTerminals(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed")
	}
	f := newFixture(t)
	if r := f.sandboxed("script -qc tty /dev/null"); !strings.HasPrefix(out(r), "/dev/pts/") {
		t.Fatalf("a terminal of the sandbox's own: exit %d %q", r.ExitCode, r.Output)
	}
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pty on the host: %v", err)
	}
	defer unix.Close(master)
	must(t, unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(master, unix.TIOCGPTN)
	must(t, err)
	host := fmt.Sprintf("/dev/pts/%d", n)
	expectDenied(t, "open the host's "+host, f.sandboxed(attackCmd(t, "open-read", host)))
	// Negative control: outside the sandbox this user opens it.
	expectWorked(t, "open the host's "+host, f.unsandboxed(attackCmd(t, "open-read", host)))
}
