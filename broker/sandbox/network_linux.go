package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Network is the network namespace of one session: its commands and background processes share its loopback (a
// server one of them starts is reachable by the others on 127.0.0.1), each in pid and mount namespaces of its own.
// A holder process keeps the namespace (and, for a broker that is not root, the user namespace that owns it)
// and forks each command's pid 1 into it, since a multithreaded Go process can enter neither. The holder ends at
// the end of its socket: Close, or the broker's exit, however it exits (the kernel closes the broker's end); every
// pid 1 it started dies with it. A Network is never shared by two sessions.
type Network struct {
	mu        sync.Mutex // one spawn at a time on the socket
	conn      *os.File   // the broker's end of the holder's socket (SOCK_SEQPACKET, close-on-exec)
	cmd       *exec.Cmd
	closed    bool
	closeOnce sync.Once
}

// NewNetwork starts the holder of a new network namespace. It fails where the kernel refuses one; the caller then
// runs commands without (each in its own namespace, or with the fallback's rules).
func NewNetwork() (*Network, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("session network: socket pair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "holder"), os.NewFile(uintptr(pair[1]), "broker")
	defer theirs.Close()
	cmd, err := helperCommand("holder")
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("session network: %w", err)
	}
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = sysProcAttr(&helperSpec{NetNS: true})
	cmd.SysProcAttr.Cloneflags &^= unix.CLONE_NEWPID | unix.CLONE_NEWNS // only the user and network namespaces
	// No parent-death signal: it follows the thread that forked, which the Go runtime may end while the broker
	// runs; the end of the socket is the broker's end, whatever thread remains.
	cmd.SysProcAttr.Pdeathsig = 0
	if err := cmd.Start(); err != nil {
		mine.Close()
		return nil, fmt.Errorf("session network: start the holder (namespaces %s): %w", nsNames(cmd.SysProcAttr.Cloneflags), err)
	}
	n := &Network{conn: mine, cmd: cmd}
	var ready [4096]byte
	k, err := mine.Read(ready[:])
	if err != nil || k != 1 || ready[0] != 0 {
		n.Close()
		if k > 1 {
			return nil, fmt.Errorf("session network: %s", ready[1:k])
		}
		return nil, fmt.Errorf("session network: the holder did not start: %v", err)
	}
	return n, nil
}

// Close ends the holder, and with it every process in the namespace (their pid 1s die with it).
func (n *Network) Close() {
	n.closeOnce.Do(func() {
		_ = n.cmd.Process.Kill() // first: a spawn under way then gets the end of the socket
		_ = n.cmd.Wait()
		n.mu.Lock()
		n.closed = true
		n.conn.Close()
		n.mu.Unlock()
	})
}

// Alive reports whether the holder still runs (it can be killed from outside: the OOM killer, an administrator).
func (n *Network) Alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	var info unix.Siginfo
	// WNOWAIT: only a look; Close reaps it.
	err := unix.Waitid(unix.P_PID, n.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == 0
}

// spawn asks the holder to start the helper stage in new pid and mount namespaces inside the network namespace,
// with files as its descriptors 0 to 4. It returns the helper's pid (in the broker's pid namespace: the holder has
// none of its own) and a pidfd of it.
func (n *Network) spawn(stage string, files []*os.File) (int, int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return 0, -1, errors.New("session network: closed")
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	if err := unix.Sendmsg(int(n.conn.Fd()), []byte(stage), unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL); err != nil {
		return 0, -1, fmt.Errorf("session network: ask the holder: %w", err)
	}
	for _, f := range files {
		runtime.KeepAlive(f)
	}
	var buf [8]byte
	oob := make([]byte, unix.CmsgSpace(4))
	k, oobn, _, _, err := unix.Recvmsg(int(n.conn.Fd()), buf[:], oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || k != len(buf) {
		return 0, -1, fmt.Errorf("session network: the holder did not answer: %v", err)
	}
	pid, errno := int(binary.NativeEndian.Uint32(buf[:4])), syscall.Errno(binary.NativeEndian.Uint32(buf[4:]))
	if errno != 0 {
		return 0, -1, fmt.Errorf("session network: start sandbox helper: %w", errno)
	}
	pidfd := -1
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		if rights, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(rights) == 1 {
			pidfd = rights[0]
		}
	}
	if pidfd < 0 {
		// Without a pidfd the helper could not be waited for nor signalled safely: the holder's parent-death
		// signal ends it when the holder is closed.
		return 0, -1, errors.New("session network: no pidfd for the helper")
	}
	return pid, pidfd, nil
}

// runHolder is the holder of a session's network namespace: it brings the loopback up, then forks, from its one
// locked thread (so that each pid 1's parent-death signal fires exactly when the holder ends), the helpers the
// broker asks for, until the broker's socket ends.
func runHolder() {
	runtime.LockOSThread()
	conn := 3
	unix.CloseOnExec(conn) // the broker's socket is the holder's alone, never a pid 1's
	if err := loopbackUp(); err != nil {
		_, _ = unix.Write(conn, append([]byte{1}, err.Error()...))
		os.Exit(1)
	}
	// Go checks once per process, at its first start of a child, that pidfds work (a test child among other
	// things): done now, while the session has no command waiting.
	_, _ = os.FindProcess(os.Getpid())
	if _, err := unix.Write(conn, []byte{0}); err != nil {
		os.Exit(1)
	}
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(5*4))
	for {
		k, oobn, _, _, err := unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || k == 0 {
			os.Exit(0) // the broker closed the session's network, or is gone
		}
		var fds []int
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for i := range msgs {
				if rights, err := unix.ParseUnixRights(&msgs[i]); err == nil {
					fds = append(fds, rights...)
				}
			}
		}
		pid, pidfd, errno := holderSpawn(string(buf[:k]), fds)
		for _, fd := range fds {
			unix.Close(fd)
		}
		var reply [8]byte
		binary.NativeEndian.PutUint32(reply[:4], uint32(pid))
		binary.NativeEndian.PutUint32(reply[4:], uint32(errno))
		var rights []byte
		if pidfd >= 0 {
			rights = unix.UnixRights(pidfd)
		}
		err = unix.Sendmsg(conn, reply[:], rights, nil, unix.MSG_NOSIGNAL)
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		if err != nil {
			os.Exit(0)
		}
	}
}

// holderSpawn starts one helper stage in new pid and mount namespaces (and, where the holder is in a user
// namespace of its own, a nested one: RLIMIT_NPROC counts per user namespace, so each command keeps its own
// count). The holder reaps it.
func holderSpawn(stage string, fds []int) (int, int, syscall.Errno) {
	if (stage != "init" && stage != "probe") || len(fds) != 5 {
		return 0, -1, unix.EINVAL
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "")
	}
	pidfd := -1
	sys := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS,
		Pdeathsig:  unix.SIGKILL, // the command dies with the holder
		Setsid:     true,
		PidFD:      &pidfd,
	}
	if inOwnUserNS() {
		sys.Cloneflags |= unix.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
		sys.GidMappingsEnableSetgroups = false
	}
	// The holder's own program (garuda-sandbox, or the broker where it is absent), whose token the broker's matched.
	p, err := os.StartProcess("/proc/self/exe", helperArgv(stage, helperToken()), &os.ProcAttr{
		Env: helperEnv, Files: files, Sys: sys,
	})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = unix.EIO
		}
		return 0, -1, errno
	}
	go func() { _, _ = p.Wait() }()
	return p.Pid, pidfd, 0
}

// inOwnUserNS reports whether the calling process is in a user namespace other than the initial one.
func inOwnUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	var inside, outside, count uint64
	_, err = fmt.Sscan(string(b), &inside, &outside, &count)
	return err == nil && !(inside == 0 && outside == 0 && count == 4294967295)
}

// pidfdProc waits for and signals a process by its pidfd (a helper whose parent is the holder, not the broker).
type pidfdProc struct {
	mu sync.Mutex
	fd int // -1 once released
}

func (p *pidfdProc) signal(sig unix.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return os.ErrProcessDone
	}
	return unix.PidfdSendSignal(p.fd, sig, nil, 0)
}

// wait returns when the process has ended (its pidfd becomes readable).
func (p *pidfdProc) wait() error {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// exited reports whether the process has ended (its pidfd is readable), without waiting.
func (p *pidfdProc) exited() bool {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// release closes the pidfd once the process has been waited for; no signal goes out after it.
func (p *pidfdProc) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}
