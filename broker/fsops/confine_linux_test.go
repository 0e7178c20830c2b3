//go:build linux

package fsops

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fixture makes a root and, beside it, an "outside" folder holding a secret.
func fixture(t *testing.T) (r *Root, root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(outside, "secret"), "SECRET\n")
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, root, outside
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
	t.Logf("%s: %v", what, err) // the message a user and a model see
}

func read(r *Root, p string, outside bool) error {
	_, err := r.read(context.Background(), ReadRequest{Path: p, Outside: outside})
	return err
}

func TestAbs(t *testing.T) {
	r, root, _ := fixture(t)
	cases := []struct {
		in     string
		abs    string
		inside bool
	}{
		{"a/b.txt", root + "/a/b.txt", true},
		{".", root, true},
		{"a/../b", root + "/b", true},
		{"../outside/secret", filepath.Dir(root) + "/outside/secret", false},
		{root + "/x", root + "/x", true},
		{root + "x", root + "x", false}, // a sibling whose name starts with the root's
		{"/etc/passwd", "/etc/passwd", false},
	}
	for _, c := range cases {
		abs, inside := r.Abs(c.in)
		if abs != c.abs || inside != c.inside {
			t.Errorf("Abs(%q) = %q, %v; want %q, %v", c.in, abs, inside, c.abs, c.inside)
		}
	}
}

func TestDotDotEscapes(t *testing.T) {
	r, root, _ := fixture(t)
	wantErr(t, "read ../outside/secret", read(r, "../outside/secret", false), ErrEscapes)
	_, err := r.prepareWrite("../outside/secret", []byte("x"))
	wantErr(t, "write ../outside/secret", err, ErrEscapes)

	// The kernel, not the lexical check, is the confinement: the raw path with .. is refused by openat2 itself.
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	_, _, err = openRegular(&target{abs: "raw", base: r.fd, rel: "sub/../../outside/secret", flags: resolveRead})
	wantErr(t, "openat2 sub/../../outside/secret", err, ErrEscapes)
	// Negative control: a plain open of the same path escapes.
	if _, err := os.ReadFile(filepath.Join(root, "sub/../../outside/secret")); err != nil {
		t.Fatalf("control: plain open should escape: %v", err)
	}
}

func TestAbsolutePathOutside(t *testing.T) {
	r, _, outside := fixture(t)
	secret := filepath.Join(outside, "secret")
	wantErr(t, "read absolute path outside", read(r, secret, false), ErrEscapes)
	_, err := r.prepareEdit(secret, "SECRET", "x", false)
	wantErr(t, "edit absolute path outside", err, ErrEscapes)

	// Once policy allowed it, the outside read and write work, opened relative to the folder's fd.
	res, err := r.read(context.Background(), ReadRequest{Path: secret, Outside: true})
	if err != nil || res.Text != "     1\tSECRET\n" {
		t.Fatalf("allowed outside read = %+v, %v", res, err)
	}
	p, err := r.prepareEditOutside(secret, "SECRET", "PUBLIC", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.commit(p, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, secret); got != "PUBLIC\n" {
		t.Fatalf("outside edit wrote %q", got)
	}
}

func TestSymlinkToOutside(t *testing.T) {
	r, root, outside := fixture(t)
	os.Symlink(outside, filepath.Join(root, "link"))                         // relative use: link/secret
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "abs")) // absolute target
	os.Symlink("../outside/secret", filepath.Join(root, "rel"))              // relative target climbing out

	for _, p := range []string{"link/secret", "abs", "rel"} {
		wantErr(t, "read "+p, read(r, p, false), ErrEscapes)
		_, err := r.prepareWrite(p, []byte("pwned"))
		if !errors.Is(err, ErrSymlink) && !errors.Is(err, ErrEscapes) {
			t.Fatalf("write %s: %v, want ErrSymlink or ErrEscapes", p, err)
		}
		// Negative control: a plain open follows the symlink out of the root.
		if got := readFile(t, filepath.Join(root, p)); got != "SECRET\n" {
			t.Fatalf("control: plain read of %s = %q", p, got)
		}
	}
	if got := readFile(t, filepath.Join(outside, "secret")); got != "SECRET\n" {
		t.Fatalf("outside file changed: %q", got)
	}
}

func TestSymlinkInsideRoot(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "real.txt"), "hello\n")
	os.Symlink("real.txt", filepath.Join(root, "alias.txt"))
	// Reads may follow a symlink that stays beneath the root.
	if err := read(r, "alias.txt", false); err != nil {
		t.Fatalf("read symlink inside root: %v", err)
	}
	// Writes never follow one: the question named alias.txt, the write would land in real.txt.
	_, err := r.prepareWrite("alias.txt", []byte("x"))
	wantErr(t, "write through symlink inside root", err, ErrSymlink)
	// The error names the path to write instead (CLAUDE.md -> AGENTS.md), as it does outside the root.
	if !strings.Contains(err.Error(), filepath.Join(root, "alias.txt")+" is a symlink to "+filepath.Join(root, "real.txt")) {
		t.Fatalf("error %q does not name where the link leads", err)
	}
	os.MkdirAll(filepath.Join(root, "v2"), 0o755)
	os.Symlink("v2", filepath.Join(root, "latest"))
	_, err = r.prepareEdit("latest/x.txt", "a", "b", false)
	if !strings.Contains(err.Error(), filepath.Join(root, "latest")+" is a symlink to "+filepath.Join(root, "v2")) {
		t.Fatalf("error %q does not name where the folder's link leads", err)
	}
}

func TestFolderSwappedForSymlink(t *testing.T) {
	r, root, outside := fixture(t)
	// The outside file has the same bytes, so the pre-image hash cannot catch the swap; only the fd-relative
	// open with no symlinks does.
	writeFile(t, filepath.Join(root, "sub", "secret"), "SECRET\n")
	p, err := r.prepareWrite("sub/secret", []byte("pwned\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "commit after the folder became a symlink", r.commit(p, nil), ErrSymlink)
	if got := readFile(t, filepath.Join(outside, "secret")); got != "SECRET\n" {
		t.Fatalf("outside file changed: %q", got)
	}
	// The file itself swapped for a symlink to a file with the same bytes: refused as well.
	writeFile(t, filepath.Join(root, "f"), "SECRET\n")
	p, err = r.prepareWrite("f", []byte("pwned\n"))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "f"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "f"))
	wantErr(t, "commit after the file became a symlink", r.commit(p, nil), ErrSymlink)
	if got := readFile(t, filepath.Join(outside, "secret")); got != "SECRET\n" {
		t.Fatalf("outside file changed: %q", got)
	}

	// Negative control: a write by path string follows the swapped folder out of the root.
	os.WriteFile(filepath.Join(root, "sub", "secret"), []byte("pwned\n"), 0o644)
	if got := readFile(t, filepath.Join(outside, "secret")); got != "pwned\n" {
		t.Fatalf("control: a path write should have escaped, outside is %q", got)
	}
}

func TestHardLinkToOutside(t *testing.T) {
	r, root, outside := fixture(t)
	secret := filepath.Join(outside, "secret")
	if err := os.Link(secret, filepath.Join(root, "h")); err != nil {
		t.Fatal(err)
	}
	_, err := r.prepareWrite("h", []byte("pwned\n"))
	wantErr(t, "write a hard-linked file", err, ErrHardLinked)
	_, err = r.prepareEdit("h", "SECRET", "pwned", false)
	wantErr(t, "edit a hard-linked file", err, ErrHardLinked)

	// A link made between the question and the answer is refused too.
	writeFile(t, filepath.Join(root, "g"), "G\n")
	p, err := r.prepareWrite("g", []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "g"), filepath.Join(outside, "g")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "commit after a hard link appeared", r.commit(p, nil), ErrHardLinked)

	// Negative control: a plain in-place write through the link changes the outside file.
	os.WriteFile(filepath.Join(root, "h"), []byte("pwned\n"), 0o644)
	if got := readFile(t, secret); got != "pwned\n" {
		t.Fatalf("control: in-place write should reach the outside file, got %q", got)
	}
}

func TestProcMagicLinks(t *testing.T) {
	r, root, outside := fixture(t)
	secret := filepath.Join(outside, "secret")
	viaProc := "/proc/self/root" + secret
	wantErr(t, "read "+viaProc, read(r, viaProc, true), ErrSymlink)
	_, err := r.prepareWriteOutside(viaProc, []byte("x"))
	wantErr(t, "write "+viaProc, err, ErrSymlink)
	// A symlink in the root to /proc/self/root: absolute, so it leaves the root.
	os.Symlink("/proc/self/root", filepath.Join(root, "p"))
	wantErr(t, "read p"+secret, read(r, "p"+secret, false), ErrEscapes)
	// /proc/self/fd/N of the root fd itself is a magic link back out of any confinement.
	wantErr(t, "read via /proc/self/fd", read(r, "/proc/self/fd/0", true), ErrSymlink)
	// Negative control: a plain open follows the magic link.
	if got := readFile(t, viaProc); got != "SECRET\n" {
		t.Fatalf("control: %q", got)
	}
}

func TestFIFODoesNotBlock(t *testing.T) {
	r, root, _ := fixture(t)
	fifo := filepath.Join(root, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// If Read blocked on the FIFO (no writer ever comes), this test would hang and fail at the test timeout.
	wantErr(t, "read a FIFO", read(r, "fifo", false), ErrNotRegular)
	_, err := r.prepareWrite("fifo", []byte("x"))
	wantErr(t, "write a FIFO", err, ErrNotRegular)
	res, err := r.grep(context.Background(), GrepRequest{Pattern: "x"}, nil)
	if err != nil || res.Count != 0 {
		t.Fatalf("grep with a FIFO in the tree = %+v, %v", res, err)
	}

	// Negative control: a plain open blocks until a writer comes. Seen from the other side: a non-blocking
	// open for writing succeeds only once a reader waits in open (else ENXIO).
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	for {
		fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0)
		if err == nil {
			unix.Close(fd)
			break
		}
		if !errors.Is(err, unix.ENXIO) {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDevicesAndSockets(t *testing.T) {
	r, root, _ := fixture(t)
	wantErr(t, "read /dev/zero", read(r, "/dev/zero", true), ErrNotRegular)
	_, err := r.prepareWriteOutside("/dev/null", []byte("x"))
	wantErr(t, "write /dev/null", err, ErrNotRegular)
	if unix.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(root, "zero"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "read a device node in the root", read(r, "zero", false), ErrNotRegular)
	} else {
		t.Log("not root: no device node in the root (mknod needs CAP_MKNOD)")
	}
	l, err := net.Listen("unix", filepath.Join(root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wantErr(t, "read a socket", read(r, "sock", false), ErrNotRegular)
	wantErr(t, "read a folder", read(r, ".", false), ErrIsDir)
}

// rchar is the number of bytes this process has read with read(2) and friends.
func rchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			var n int64
			for _, c := range v {
				n = n*10 + int64(c-'0')
			}
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

func TestSparse5GB(t *testing.T) {
	r, root, _ := fixture(t)
	for _, c := range []struct{ name, head string }{{"zeros", ""}, {"text-then-zeros", "hello\n"}} {
		p := filepath.Join(root, c.name)
		writeFile(t, p, c.head)
		if err := os.Truncate(p, 5<<30); err != nil {
			t.Skipf("cannot make a 5 GB sparse file here: %v", err)
		}
		before := rchar(t)
		wantErr(t, "read 5 GB sparse "+c.name, read(r, c.name, false), ErrBinary)
		if n := rchar(t) - before; n > 1<<20 {
			t.Fatalf("read %d bytes of a 5 GB file, want at most 1 MiB", n)
		}
		gr, err := r.grep(context.Background(), GrepRequest{Pattern: "hello"}, nil)
		if err != nil || gr.Count != 0 {
			t.Fatalf("grep over a sparse file = %+v, %v (binary files are skipped)", gr, err)
		}
		os.Remove(p)
	}
	// A huge text file is not read past the scan cap either.
	r.Limits.ScanBytes = 1 << 20
	big := bytes.Repeat([]byte("line\n"), 300_000) // 1.5 MB
	os.WriteFile(filepath.Join(root, "big.txt"), big, 0o644)
	_, err := r.read(context.Background(), ReadRequest{Path: "big.txt", Offset: 250_000})
	wantErr(t, "read past the scan cap", err, ErrTooLarge)
}

func TestReadBinary(t *testing.T) {
	r, root, _ := fixture(t)
	writeFile(t, filepath.Join(root, "bin"), "ELF\x00\x01\x02")
	wantErr(t, "read a binary file", read(r, "bin", false), ErrBinary)
}

func TestSymlinkReadRechecked(t *testing.T) {
	r, root, outside := fixture(t)
	writeFile(t, filepath.Join(root, ".env"), "TOKEN=1\n")
	os.Symlink(".env", filepath.Join(root, "README"))
	noEnv := func(real string) bool { return filepath.Base(real) != ".env" }

	_, err := r.read(context.Background(), ReadRequest{Path: "README", Recheck: noEnv})
	wantErr(t, "read a symlink to a denied file", err, ErrDenied)
	res, err := r.read(context.Background(), ReadRequest{Path: "README", Recheck: func(string) bool { return true }})
	if err != nil || res.Real != filepath.Join(root, ".env") || res.Abs != filepath.Join(root, "README") {
		t.Fatalf("allowed read through a symlink = %+v, %v", res, err)
	}
	// A plain file is not rechecked: Real is the path asked.
	writeFile(t, filepath.Join(root, "plain"), "x\n")
	res, err = r.read(context.Background(), ReadRequest{Path: "plain", Recheck: func(string) bool { return false }})
	if err != nil || res.Real != res.Abs {
		t.Fatalf("plain read = %+v, %v", res, err)
	}

	// Outside the root no symlink is followed, and the error names where the link leads, to ask for that path.
	os.Symlink("secret", filepath.Join(outside, "link"))
	_, err = r.read(context.Background(), ReadRequest{Path: filepath.Join(outside, "link"), Outside: true})
	wantErr(t, "read a symlink outside the root", err, ErrSymlink)
	if !strings.Contains(err.Error(), "is a symlink to "+filepath.Join(outside, "secret")) {
		t.Fatalf("error %q does not name where the link leads", err)
	}
}

// Outside the root, the hint of a path that goes through a symlink names only the link's own text: what lies behind
// it was never decided, so its existence and its own links do not show (a resolved hint named them).
func TestSymlinkHintLooksNoFurther(t *testing.T) {
	r, _, outside := fixture(t)
	hidden := filepath.Join(outside, "hidden")
	os.Symlink(hidden, filepath.Join(outside, "link"))
	hint := func() string {
		_, err := r.read(context.Background(), ReadRequest{Path: filepath.Join(outside, "link", "sub"), Outside: true})
		wantErr(t, "read through a symlinked folder outside the root", err, ErrSymlink)
		return err.Error()
	}
	missing := hint()
	os.MkdirAll(hidden, 0o755)
	os.Symlink("/etc/hostname", filepath.Join(hidden, "sub"))
	if there := hint(); there != missing || strings.Contains(there, "/etc") {
		t.Fatalf("the hint depends on what lies behind the link:\n%s\n%s", missing, there)
	}
}
