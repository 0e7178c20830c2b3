package sandbox

import (
	"encoding/binary"
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
