// The test binary as a tool: the one helper process of this package's tests, an attack inside the sandbox or a
// minimal broker outside it.

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attackArg makes the test binary an attack tool inside the sandbox, or a minimal broker outside it: $TESTBIN __attack
// NAME ARGS... It is the one helper process of this package's tests (TestMain dispatches it). An attack prints
// "OK ..." and exits 0 when it worked, "DENIED ..." and exits 1 when it did not.
const attackArg = "__attack"

// attackCmd is the shell command that runs the test binary as an attack tool.
func attackCmd(t *testing.T, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	q := []string{shq(exe), attackArg}
	for _, a := range args {
		q = append(q, shq(a))
	}
	return strings.Join(q, " ")
}

func runAttack(args []string) int {
	ok := func(f string, a ...any) int { fmt.Printf("OK "+f+"\n", a...); return 0 }
	denied := func(err error) int { fmt.Printf("DENIED %v\n", err); return 1 }
	switch args[0] {
	case "tcp": // connect to ADDR
		c, err := net.DialTimeout("tcp", args[1], 2*time.Second)
		if err != nil {
			return denied(err)
		}
		c.Close()
		return ok("connected to %s", args[1])
	case "udp": // send a datagram to ADDR (success of sendto proves nothing: the receiver checks)
		c, err := net.Dial("udp", args[1])
		if err != nil {
			return denied(err)
		}
		if _, err := c.Write([]byte("exfil")); err != nil {
			return denied(err)
		}
		return ok("sent")
	case "dns": // resolve a name through the DNS server at ADDR
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", args[1])
		}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := r.LookupHost(ctx, "exfil.example.com"); err != nil {
			return denied(err)
		}
		return ok("resolved")
	case "unix", "abstract": // connect to a unix socket by path, or to an abstract one (@name)
		name := args[1]
		if args[0] == "abstract" {
			name = "@" + name
		}
		c, err := net.Dial("unix", name)
		if err != nil {
			return denied(err)
		}
		c.Close()
		return ok("connected to %s", name)
	case "kill": // SIGTERM to PID
		pid, _ := strconv.Atoi(args[1])
		if err := unix.Kill(pid, unix.SIGTERM); err != nil {
			return denied(err)
		}
		return ok("signalled %d", pid)
	case "environ": // read /proc/PID/environ and look for NEEDLE
		b, err := os.ReadFile("/proc/" + args[1] + "/environ")
		if err != nil {
			return denied(err)
		}
		if strings.Contains(string(b), args[2]) {
			return ok("found %s", args[2])
		}
		return denied(fmt.Errorf("%s not in /proc/%s/environ", args[2], args[1]))
	case "tiocsti": // push a byte into stdin's terminal; arg 1: set high bits of the request
		req := uint64(unix.TIOCSTI)
		if args[1] == "1" {
			req |= 1 << 32
		}
		c := byte('x')
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, 0, uintptr(req), uintptr(unsafe.Pointer(&c)))
		fmt.Printf("ERRNO %v\n", errno)
		if errno == 0 {
			return ok("TIOCSTI accepted")
		}
		return denied(errno)
	case "mknod": // create the character device /dev/null (1,3) at PATH
		if err := unix.Mknod(args[1], unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			return denied(err)
		}
		return ok("made %s", args[1])
	case "iouring":
		var params [120]byte
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if errno != 0 {
			return denied(errno)
		}
		unix.Close(int(fd))
		return ok("io_uring ring created")
	case "serve": // listen on 127.0.0.1 and talk to ourselves
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return denied(err)
		}
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte("pong"))
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			return denied(err)
		}
		buf := make([]byte, 4)
		n, _ := c.Read(buf)
		return ok("local server answered %q", buf[:n])
	case "alloc": // allocate N MiB and touch every page; with a second argument, then hold it until that file exists
		n, _ := strconv.Atoi(args[1])
		keep := allocate(n)
		fmt.Printf("allocated %d MiB\n", n)
		for len(args) > 2 {
			if _, err := os.Stat(args[2]); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		runtime.KeepAlive(keep)
		return ok("held %d MiB", n)
	case "procs": // start up to N sleeping processes; report how many started
		n, _ := strconv.Atoi(args[1])
		started := 0
		var err error
		for ; started < n; started++ {
			c := exec.Command("sleep", "30")
			if err = c.Start(); err != nil {
				break
			}
		}
		fmt.Printf("STARTED %d %v\n", started, err)
		if started == n {
			return ok("all %d started", n)
		}
		return denied(err)
	case "vsock-bind": // bind PORT on every vsock CID: EADDRINUSE means the port space is the host's
		port, _ := strconv.Atoi(args[1])
		fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
		if err != nil {
			return denied(fmt.Errorf("socket(AF_VSOCK): %w", err))
		}
		defer unix.Close(fd)
		err = unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: uint32(port)})
		if errors.Is(err, unix.EADDRINUSE) {
			return ok("vsock port %d is the host's (in use)", port)
		}
		if err != nil {
			return denied(err)
		}
		return ok("bound vsock port %d", port)
	case "socket": // socket(FAMILY, TYPE, 0)
		fam, _ := strconv.Atoi(args[1])
		typ, _ := strconv.Atoi(args[2])
		fd, err := unix.Socket(fam, typ, 0)
		if err != nil {
			return denied(err)
		}
		unix.Close(fd)
		return ok("socket family %d created", fam)
	case "unix-listen": // listen on the unix socket PATH (relative: from the working folder) until killed
		l, err := net.Listen("unix", args[1])
		if err != nil {
			return denied(err)
		}
		fmt.Println("listening")
		for {
			c, err := l.Accept()
			if err != nil {
				return denied(err)
			}
			c.Close()
		}
	case "open-read": // open PATH read-only
		f, err := os.Open(args[1])
		if err != nil {
			return denied(err)
		}
		f.Close()
		return ok("opened %s", args[1])
	case "syscall": // make the named syscall with harmless arguments; print its errno
		errno := kernelCall(args[1])
		fmt.Printf("ERRNO %d %v\n", int(errno), errno)
		if errno == 0 {
			return ok("%s worked", args[1])
		}
		return denied(errno)
	case "setxattr": // set the extended attribute user.garuda on PATH
		if err := unix.Setxattr(args[1], "user.garuda", []byte("pwned"), 0); err != nil {
			return denied(err)
		}
		return ok("xattr set on %s", args[1])
	case "broker": // run COMMAND in ROOT with TMP writable, its output printed as it comes; then any of: net (in a
		// session network, whose holder's pid is printed first), unsandboxed, hidden=A,B,..., readonly=A,B,...
		return runBroker(args[1], args[2], args[3], args[4:])
	}
	fmt.Fprintf(os.Stderr, "unknown attack %v\n", args)
	return 2
}

// runBroker runs one command as the broker would: sandboxed (or not) in root, with tmp writable, and prints its output
// as it comes; it exits with the command's exit code.
func runBroker(root, tmp, command string, opts []string) int {
	s := Spec{Command: command, Root: root, Writable: []string{tmp}, Env: BaseEnv(tmp, tmp, nil),
		OnOutput: func(b []byte) { os.Stdout.Write(b) }}
	var sessionNet bool
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "net":
			sessionNet = true
		case "unsandboxed":
			s.Unsandboxed = true
		case "hidden":
			s.Hidden = splitList(v)
		case "readonly":
			s.ReadOnly = splitList(v)
		case "":
		default:
			fmt.Fprintf(os.Stderr, "unknown broker option %q\n", o)
			return 2
		}
	}
	if sessionNet {
		n, err := NewNetwork()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer n.Close()
		fmt.Printf("holder %d\n", n.cmd.Process.Pid)
		s.Network = n
	}
	r, err := Run(context.Background(), s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return r.ExitCode
}

// allocate maps and touches mib MiB in 64 MiB pieces, outside the Go heap (so that a -race build touches no shadow
// memory for them). A mapping the kernel refuses (RLIMIT_DATA) ends the program with "cannot allocate memory"; a
// memory cgroup kills it.
func allocate(mib int) [][]byte {
	var keep [][]byte
	for done := 0; done < mib; done += 64 {
		b, err := unix.Mmap(-1, 0, min(64, mib-done)<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			fmt.Printf("DENIED after %d MiB: %v\n", done, err)
			os.Exit(1)
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	return keep
}

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
		attr := unix.PerfEventAttr{
			Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Bits: unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
		}
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
		_, err := unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &dst[0], Len: 1}},
			[]unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 1}}, 0)
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
