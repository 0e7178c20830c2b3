package openat2

import "golang.org/x/sys/unix"

// tries bounds the retries: a rename storm in the project cannot keep a call looping.
const tries = 16

// Open is unix.Openat2, retried while the kernel answers EAGAIN or EINTR; after tries of them, their error.
func Open(dirfd int, path string, how *unix.OpenHow) (int, error) {
	var err error
	for range tries {
		var fd int
		if fd, err = unix.Openat2(dirfd, path, how); err == nil {
			return fd, nil
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			break
		}
	}
	return -1, err
}
