package sandbox

import "golang.org/x/sys/unix"

const (
	seccompArchSupported = true
	seccompArch          = unix.AUDIT_ARCH_X86_64
	x32Bit               = 0x40000000
)

// deniedSyscalls fail with EPERM: kernel attack surface and known sandbox bypasses (io_uring skips seccomp and
// Landlock checks on its own ops; ptrace and process_vm_* reach other processes; bpf, keyrings, kexec, module
// loading, the mount API and setns change the kernel or the namespaces; clock and hostname calls change the host).
var deniedSyscalls = []uint32{
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_BPF, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE,
	unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR, unix.SYS_SETNS, unix.SYS_CHROOT,
	unix.SYS_USERFAULTFD, unix.SYS_PERF_EVENT_OPEN, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
	unix.SYS_ACCT, unix.SYS_QUOTACTL,
}

// setidModeSyscalls take a file mode in the given argument; a mode with the set-user-ID or set-group-ID bit fails
// with EPERM, so that a command cannot leave a set-id program in the project (a root broker's commands run as uid 0
// without capabilities, and a file they own set-uid would give root to whoever runs it later).
var setidModeSyscalls = [][2]uint32{
	{unix.SYS_CHMOD, 1}, {unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {sysFchmodat2, 2},
	{unix.SYS_OPEN, 2}, {unix.SYS_OPENAT, 3}, {unix.SYS_CREAT, 1}, {unix.SYS_MKNOD, 1}, {unix.SYS_MKNODAT, 2},
}

// sysFchmodat2 is fchmodat2 (Linux 6.6), which x/sys may not name yet.
const sysFchmodat2 = 452

// sysOpenat2 takes its mode inside a struct the filter cannot read: it fails with ENOSYS and libc uses openat.
const sysOpenat2 = unix.SYS_OPENAT2
