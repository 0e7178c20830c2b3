package testproc

import (
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"
)

// StartBelow starts cmd one real-time priority below the caller when the caller runs at a real-time priority above
// 1 (`chrt -r 2`, for figures on a shared machine), else as cmd.Start does. A benchmark that reads a process's
// answer is then woken the moment it is written, as an editor is on a quiet machine; at the same priority it waits
// until the measured processes leave a core.
func StartBelow(cmd *exec.Cmd) error {
	runtime.LockOSThread() // the child inherits this thread's policy
	defer runtime.UnlockOSThread()
	var cur, low struct{ prio int32 }
	pol, _, _ := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	syscall.RawSyscall(syscall.SYS_SCHED_GETPARAM, 0, uintptr(unsafe.Pointer(&cur)), 0)
	const fifo, rr = 1, 2
	if (pol == fifo || pol == rr) && cur.prio > 1 {
		low.prio = cur.prio - 1
		if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, pol, uintptr(unsafe.Pointer(&low))); e == 0 {
			defer syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, pol, uintptr(unsafe.Pointer(&cur)))
		}
	}
	return cmd.Start()
}
