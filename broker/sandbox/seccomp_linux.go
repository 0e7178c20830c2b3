package sandbox

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	// Offsets in struct seccomp_data; arguments are 64-bit, their low half first (little endian).
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	// Terminal ioctls that push input to, or act on, a terminal (linux/ioctls.h).
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541C
)

// buildSeccomp assembles the filter: other architectures are killed; the listed syscalls fail with EPERM;
// clone/unshare asking for a new user namespace fail with EPERM; clone3 (whose flags a filter cannot read) fails
// with ENOSYS so that libc falls back to clone; TIOCSTI and TIOCLINUX fail with EPERM; sockets of a family not in
// socketFamilies fail with EPERM. Only the low 32 bits of an ioctl request are compared because the kernel
// truncates it to 32 bits (defends against high-bit bypasses). onlyUnixSockets also refuses every socket but
// AF_UNIX (the fallback where no network namespace exists).
func buildSeccomp(onlyUnixSockets bool) ([]unix.SockFilter, error) {
	if !seccompArchSupported {
		return nil, fmt.Errorf("seccomp: no syscall table for this architecture")
	}
	raw, err := bpf.Assemble(seccompProgram(onlyUnixSockets))
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

func seccompProgram(onlyUnixSockets bool) []bpf.Instruction {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		// Another ABI (i386 via int 0x80) would reach syscalls under other numbers: kill it.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: seccompArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		// x32 syscall numbers alias the x86_64 ones with this bit set: refuse them all.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1}, bpf.RetConstant{Val: retEPERM})
	}
	for _, nr := range deniedSyscalls {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1}, bpf.RetConstant{Val: retEPERM})
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipFalse: 1},
		bpf.RetConstant{Val: retNOSYS},
	)
	for _, nr := range []uint32{unix.SYS_CLONE, unix.SYS_UNSHARE} {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 4},
			bpf.LoadAbsolute{Off: offArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_NEWUSER, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM},
			bpf.RetConstant{Val: retAllow},
		)
	}
	// Only the address families a network namespace isolates: AF_VSOCK reaches the hypervisor and the machine's
	// vsock services from any namespace, and a family not loaded yet makes the kernel load its module.
	families := socketFamilies
	if onlyUnixSockets {
		families = []uint32{unix.AF_UNIX}
	}
	for _, nr := range []uint32{unix.SYS_SOCKET, unix.SYS_SOCKETPAIR} {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: uint8(len(families) + 3)},
			bpf.LoadAbsolute{Off: offArg0, Size: 4},
		)
		for i, fam := range families {
			prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: fam, SkipTrue: uint8(len(families) - i)})
		}
		prog = append(prog, bpf.RetConstant{Val: retEPERM}, bpf.RetConstant{Val: retAllow})
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: sysOpenat2, SkipFalse: 1},
		bpf.RetConstant{Val: retNOSYS},
	)
	for _, sc := range setidModeSyscalls {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: sc[0], SkipFalse: 4},
			bpf.LoadAbsolute{Off: offArg0 + 8*sc[1], Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.S_ISUID | unix.S_ISGID, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM},
			bpf.RetConstant{Val: retAllow},
		)
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IOCTL, SkipFalse: 6},
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioctlTIOCSTI, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioctlTIOCLINUX, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
		bpf.RetConstant{Val: retAllow}, // every other syscall
	)
	return prog
}

// socketFamilies are the address families a command may use: unix, IPv4 and IPv6 (only the loopback of the
// command's own network namespace), netlink (of that namespace: ip, getaddrinfo).
var socketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}
