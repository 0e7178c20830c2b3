package guard

import (
	"errors"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotify tells which folders' entries changed since the last look, so that a scan re-reads only those. Its
// watches follow inodes, so a change made inside a command's own mount namespace is seen too.
type inotify struct {
	fd       int
	f        *os.File // fd, for the runtime's poller: changes waits on it without reading
	poisoned bool
	buf      []byte

	mu   sync.Mutex
	wake chan struct{} // closed at the next event (changes); nil when no one waits
}

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF |
	unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// contentMask adds the changes of the files in a git folder and its hooks folder (a config appended to, a hook
// rewritten or made executable in place): they wake a running process's check (changes) like a new entry.
const contentMask = watchMask | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB

func newNotifier() notifier {
	n := &inotify{fd: -1, buf: make([]byte, 64<<10)}
	n.reset()
	return n
}

func (n *inotify) reset() {
	n.close()
	n.poisoned = false
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		n.fd, n.poisoned = -1, true
		return
	}
	n.fd, n.f = fd, os.NewFile(uintptr(fd), "inotify")
}

func (n *inotify) watch(abs string, content bool) int32 {
	if n.fd < 0 || n.poisoned {
		return -1
	}
	mask := uint32(watchMask)
	if content {
		mask = contentMask
	}
	wd, err := unix.InotifyAddWatch(n.fd, abs, mask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
			n.poisoned = true // out of watches: walk whole every time
		}
		return -1
	}
	return int32(wd)
}

func (n *inotify) unwatch(wd int32) {
	if n.fd >= 0 {
		unix.InotifyRmWatch(n.fd, uint32(wd))
	}
}

func (n *inotify) poison() { n.poisoned = true }

// changed drains the queue. ok is false when the answer cannot be trusted (no inotify, out of watches, an overflow
// of the kernel's queue): the caller walks whole.
func (n *inotify) changed() (dirty, gone map[int32]bool, ok bool) {
	dirty, gone = map[int32]bool{}, map[int32]bool{}
	if n.fd < 0 || n.poisoned {
		return dirty, gone, false
	}
	ok = true
	for {
		m, err := unix.Read(n.fd, n.buf)
		if err != nil || m <= 0 {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return dirty, gone, ok && (err == nil || errors.Is(err, unix.EAGAIN))
		}
		for off := 0; off+unix.SizeofInotifyEvent <= m; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&n.buf[off]))
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				ok = false
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
				gone[ev.Wd] = true
			default:
				dirty[ev.Wd] = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// changes returns a channel closed when the queue holds an event (it may already), or when the watches are closed;
// nil when they cannot be trusted. It reads nothing: changed still drains the queue.
func (n *inotify) changes() <-chan struct{} {
	if n.f == nil || n.poisoned {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wake == nil {
		n.wake = make(chan struct{})
		go n.await(n.f, n.wake)
	}
	return n.wake
}

// await closes wake once f is readable (through the runtime's poller: no thread waits), or closed.
func (n *inotify) await(f *os.File, wake chan struct{}) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Read(func(fd uintptr) bool { //nolint:errcheck // closed: wake as for an event
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			k, err := unix.Poll(p, 0)
			return err != nil && !errors.Is(err, unix.EINTR) || k > 0
		})
	}
	n.mu.Lock()
	if n.wake == wake {
		n.wake = nil
	}
	n.mu.Unlock()
	close(wake)
}

func (n *inotify) close() {
	if n.f != nil {
		n.f.Close() // wakes await
		n.f, n.fd = nil, -1
	}
}
