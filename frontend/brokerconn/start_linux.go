package brokerconn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// start runs garuda-exec with one end of a socketpair as its fd 3. The process is started in the background (its
// fork and exec take about a millisecond that the front end need not wait for: an editor's initialize is answered
// meanwhile); Spawned closes once it has started or failed to, and a failure is the broker's end (Done, Err).
func (b *Broker) start(o Options) (net.Conn, error) {
	path := o.Exec
	if path == "" {
		p, err := Find()
		if err != nil {
			return nil, err
		}
		path = p
	} else if !isExecutable(path) {
		return nil, fmt.Errorf("%s is missing or not executable; reinstall garuda (make install)", path)
	}
	b.Path = path
	// The broker refuses a relative GARUDA_HOME and exits; said here, the user reads why instead of a reset socket.
	if h := os.Getenv("GARUDA_HOME"); h != "" && !filepath.IsAbs(h) {
		return nil, fmt.Errorf("GARUDA_HOME=%s must be an absolute path (it is where Garuda keeps its settings and keys)", h)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "broker")
	theirs := os.NewFile(uintptr(fds[1]), "frontend")
	cmd := exec.Command(path, "child")
	cmd.Env = brokerEnv(os.Environ())
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stdin = nil
	cmd.Stdout = o.Stderr // never the protocol stream
	cmd.Stderr = o.Stderr
	// The broker also learns of the front end's death by EOF on its socket; this is a second signal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: o.OwnGroup}
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	b.cmd = cmd
	go func() {
		err := cmd.Start()
		theirs.Close()
		close(b.spawned)
		if err != nil {
			c.Close()
			b.gone(fmt.Errorf("start %s: %w", path, err))
			close(b.waited)
			return
		}
		err = cmd.Wait()
		if err == nil {
			err = errors.New("it exited")
		}
		b.gone(fmt.Errorf("the broker (%s) exited unexpectedly: %v", filepath.Base(path), err))
		close(b.waited)
	}()
	return c, nil
}
