package cli

import (
	"bufio"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// guardStdout keeps the real stdout for the protocol and points descriptor 1 at stderr, so that anything else that
// writes to stdout (fmt, a library, a child) lands on stderr: defends the JSON-RPC stream against stray output.
func guardStdout() (*os.File, error) {
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("keep stdout for the protocol: %w", err)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		return nil, fmt.Errorf("point stdout at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "protocol"), nil
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// readSecret reads a line with the terminal's echo off.
func readSecret(in *bufio.Reader) (string, error) {
	old, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		return readLine(in)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(0, unix.TCSETS, &quiet); err != nil {
		return "", fmt.Errorf("turn off echo: %w", err)
	}
	defer unix.IoctlSetTermios(0, unix.TCSETS, old)
	return readLine(in)
}

// watchPipeReader calls gone when f is a pipe whose reader closed it (POLLERR on the write end); for anything
// else it returns at once.
func watchPipeReader(f *os.File, gone func()) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd())}}
	for {
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			gone()
			return
		}
	}
}
