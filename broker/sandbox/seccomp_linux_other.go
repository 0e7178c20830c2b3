//go:build linux && !amd64

package sandbox

// No syscall table is kept for this architecture: seccomp is reported missing and commands fail closed.
const (
	seccompArchSupported = false
	seccompArch          = 0
	x32Bit               = 0
)

var deniedSyscalls []uint32

var setidModeSyscalls [][2]uint32

const sysOpenat2 = 0
