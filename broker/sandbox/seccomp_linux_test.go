// The seccomp filter: its decisions, and the kernel surface and socket families it refuses.

package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompVerdict runs the filter in x/net/bpf's VM on a seccomp_data built for the VM's big-endian word loads.
func seccompVerdict(t *testing.T, onlyUnix bool, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(seccompProgram(onlyUnix))
	must(t, err)
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNr:], nr)
	binary.BigEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		// Each argument is 64 bits; the filter reads the low half, which seccomp_data keeps first.
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(a>>32))
	}
	v, err := vm.Run(data)
	must(t, err)
	return uint32(v)
}

func TestSeccompFilterDecisions(t *testing.T) {
	if !seccompArchSupported {
		t.Skip("no seccomp table for this architecture")
	}
	arch := uint32(seccompArch)
	cases := []struct {
		name     string
		onlyUnix bool
		arch, nr uint32
		args     []uint64
		want     uint32
	}{
		{"read allowed", false, arch, unix.SYS_READ, nil, retAllow},
		{"other arch killed", false, unix.AUDIT_ARCH_I386, unix.SYS_READ, nil, retKill},
		{"x32 refused", false, arch, x32Bit | unix.SYS_PTRACE, nil, retEPERM},
		{"ptrace", false, arch, unix.SYS_PTRACE, nil, retEPERM},
		{"io_uring_setup", false, arch, unix.SYS_IO_URING_SETUP, nil, retEPERM},
		{"mount", false, arch, unix.SYS_MOUNT, nil, retEPERM},
		{"setns", false, arch, unix.SYS_SETNS, nil, retEPERM},
		{"clone3 falls back", false, arch, unix.SYS_CLONE3, nil, retNOSYS},
		{"clone thread allowed", false, arch, unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD}, retAllow},
		{"clone new user ns", false, arch, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, retEPERM},
		{"unshare new user ns", false, arch, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWUSER}, retEPERM},
		{"unshare files allowed", false, arch, unix.SYS_UNSHARE, []uint64{unix.CLONE_FILES}, retAllow},
		{"TIOCSTI", false, arch, unix.SYS_IOCTL, []uint64{0, ioctlTIOCSTI}, retEPERM},
		{"TIOCSTI high bits", false, arch, unix.SYS_IOCTL, []uint64{0, 1<<32 | ioctlTIOCSTI}, retEPERM},
		{"TIOCLINUX", false, arch, unix.SYS_IOCTL, []uint64{0, ioctlTIOCLINUX}, retEPERM},
		{"FIONREAD allowed", false, arch, unix.SYS_IOCTL, []uint64{0, unix.TIOCINQ}, retAllow},
		{"inet socket with netns", false, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET}, retAllow},
		{"inet socket fallback", true, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET}, retEPERM},
		{"inet6 socket fallback", true, arch, unix.SYS_SOCKET, []uint64{unix.AF_INET6}, retEPERM},
		{"netlink socket fallback", true, arch, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK}, retEPERM},
		{"unix socket fallback", true, arch, unix.SYS_SOCKET, []uint64{unix.AF_UNIX}, retAllow},
	}
	for _, c := range cases {
		if got := seccompVerdict(t, c.onlyUnix, c.arch, c.nr, c.args...); got != c.want {
			t.Errorf("%s: verdict %#x, want %#x", c.name, got, c.want)
		}
	}
	// No syscall falls off the end of the filter (that would be an accidental SECCOMP_RET_KILL_THREAD).
	for _, onlyUnix := range []bool{false, true} {
		for nr := uint32(0); nr < 600; nr++ {
			switch v := seccompVerdict(t, onlyUnix, arch, nr, 0, 0); v {
			case retAllow, retEPERM, retNOSYS:
			default:
				t.Fatalf("syscall %d: verdict %#x", nr, v)
			}
		}
	}
}

// TestSeccompSocketFamilyDecisions: the filter refuses every socket family but unix, IPv4, IPv6 and netlink, with a network
// namespace or without, whatever the high bits of the argument.
// Found by red team.
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

func TestAttackTIOCSTI(t *testing.T) {
	f := newFixture(t)
	// stdin is /dev/null: without the filter TIOCSTI fails with ENOTTY, with it EPERM before the kernel looks.
	for _, high := range []string{"0", "1"} {
		r := f.sandboxed(attackCmd(t, "tiocsti", high))
		if !strings.Contains(string(r.Output), "ERRNO operation not permitted") {
			t.Errorf("TIOCSTI (high bits %s) not refused by seccomp: %q", high, r.Output)
		}
		r = f.unsandboxed(attackCmd(t, "tiocsti", high))
		if !strings.Contains(string(r.Output), "ERRNO inappropriate ioctl for device") {
			t.Errorf("negative control: TIOCSTI (high bits %s) without the filter: %q", high, r.Output)
		}
	}
}

func TestAttackKernelSurface(t *testing.T) {
	f := newFixture(t)
	expectDenied(t, "io_uring", f.sandboxed(attackCmd(t, "iouring")))
	if r := f.unsandboxed(attackCmd(t, "iouring")); r.ExitCode != 0 {
		t.Logf("no negative control for io_uring: it fails here without the sandbox too: %q", r.Output)
	}
	cmd := "unshare --user --map-root-user true"
	expectDenied(t, "new user namespace", f.sandboxed(cmd))
	expectWorked(t, "new user namespace", f.unsandboxed(cmd))
}

// TestAttackKernelSurfaceSyscalls: each syscall of the kernel's attack surface (or a known escape) is refused by the
// filter with EPERM; without it the kernel answers otherwise (success, or its own refusal).
// Found by red team.
func TestAttackKernelSurfaceSyscalls(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{
		"userfaultfd", "perf_event_open", "bpf", "keyctl", "add_key", "process_vm_readv", "open_by_handle_at", "setns", "mount",
		"unshare-userns",
	} {
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

// TestAttackVsock: AF_VSOCK is not isolated by a network namespace (it reaches the hypervisor, CID 2, and
// every vsock service of this machine); the seccomp filter refuses the family.
// Found by red team.
func TestAttackVsock(t *testing.T) {
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

// TestAttackSocketFamilies: of the address families, only those a network namespace isolates are allowed.
// Found by red team.
func TestAttackSocketFamilies(t *testing.T) {
	f := newFixture(t)
	for _, fam := range []int{unix.AF_VSOCK, unix.AF_ALG, unix.AF_TIPC, unix.AF_RDS, unix.AF_KCM, unix.AF_QIPCRTR, unix.AF_XDP} {
		r := f.sandboxed(attackCmd(t, "socket", strconv.Itoa(fam), strconv.Itoa(unix.SOCK_SEQPACKET)))
		if !strings.Contains(out(r), "DENIED operation not permitted") {
			t.Errorf("socket family %d in the sandbox: not refused by seccomp: %q", fam, r.Output)
		}
	}
	// Everyday families still work: unix, IPv4, IPv6, netlink (ip, getaddrinfo).
	for _, c := range [][2]int{
		{unix.AF_UNIX, unix.SOCK_STREAM}, {unix.AF_INET, unix.SOCK_STREAM}, {unix.AF_INET6, unix.SOCK_DGRAM}, {unix.AF_NETLINK, unix.SOCK_RAW},
	} {
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
