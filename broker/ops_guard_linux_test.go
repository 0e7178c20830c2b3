// The command guard's walk: the only walk of the project around a command, and the one that finds what "**"
// read-deny rules hide.

package broker_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// folderOpens counts, through inotify, how often each folder below root is opened (listed): what a walk costs.
type folderOpens struct {
	fd    int
	names map[int]string
}

func watchFolderOpens(t *testing.T, root string) *folderOpens {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	o := &folderOpens{fd: fd, names: map[int]string{}}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root {
			return err
		}
		wd, err := unix.InotifyAddWatch(fd, p, unix.IN_OPEN|unix.IN_ONLYDIR)
		o.names[wd] = strings.TrimPrefix(p, root+"/")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	o.take(t) // the walk above
	return o
}

// take returns how often each folder was opened since the last call (its own events only, not its children's).
func (o *folderOpens) take(t *testing.T) map[string]int {
	n := map[string]int{}
	buf := make([]byte, 1<<16)
	for {
		m, err := unix.Read(o.fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= m; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify queue overflow")
			}
			if ev.Mask&unix.IN_OPEN != 0 && ev.Len == 0 {
				n[o.names[int(ev.Wd)]]++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// TestCommandWalksTheProjectOnce: a sandboxed command under a "**" read-deny rule lists each folder of the project
// once before it runs (the guard's walk, which finds the secrets to hide too), and a later command, nothing having
// changed, lists none (the guard's watches tell what changed). The nested secret is still hidden from both.
// Before, the read-deny rule walked the whole project again for every command.
func TestCommandWalksTheProjectOnce(t *testing.T) {
	e := brokertest.New(t)
	root := e.Root
	var folders []string
	for i := range 5 {
		for j := range 4 {
			d := fmt.Sprintf("pkg%d/sub%d", i, j)
			must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
			must(t, os.WriteFile(filepath.Join(root, d, "f.go"), []byte("package x // visible"), 0o644))
			folders = append(folders, d)
		}
	}
	must(t, os.MkdirAll(filepath.Join(root, "node_modules", "dep"), 0o755)) // left out by the guard, not by the rule
	must(t, os.WriteFile(filepath.Join(root, "pkg3", "sub2", ".env"), []byte("TOKEN=nested-secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "node_modules", "dep", ".env"), []byte("TOKEN=dep-secret"), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "private"), 0o755)) // a denied folder: hidden whole, never listed
	must(t, os.WriteFile(filepath.Join(root, "private", "key.pem"), []byte("private-secret"), 0o644))
	e.Settings(t, `{"permissions":{"deny":["Read(**/.env)","Read(**/private)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	opens := watchFolderOpens(t, root)
	const cmd = "cat pkg3/sub2/.env node_modules/dep/.env private/key.pem pkg0/sub0/f.go 2>&1; true"
	for run := range 2 {
		r := brokertest.Sh(t, c, sid, cmd)
		if r.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(r.GetContent(), "package x // visible") {
			t.Fatalf("run %d: %v", run, r)
		}
		for _, secret := range []string{"nested-secret", "dep-secret", "private-secret"} {
			if strings.Contains(r.GetContent(), secret) {
				t.Errorf("run %d: the command read %s:\n%s", run, secret, r.GetContent())
			}
		}
		got := opens.take(t)
		want := 1 - run // the first command walks the project once, the next one reads nothing again
		for _, d := range append(folders, "pkg3", "node_modules/dep") {
			if got[d] != want {
				t.Errorf("run %d: %s listed %d times, want %d (all: %v)", run, d, got[d], want, got)
			}
		}
		if got["private"] != 0 {
			t.Errorf("run %d: the denied folder was listed %d times", run, got["private"])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCommandPastTheLimitWithDenyRule: with a "**" read-deny rule the walk searches node_modules for what it hides,
// so a tree past the limit there is refused with the limit named, never run half searched. Control: without the
// rule the guard leaves node_modules out and the command runs.
func TestCommandPastTheLimitWithDenyRule(t *testing.T) {
	for _, rule := range []string{"", `,"permissions":{"deny":["Read(**/.env)"]}`} {
		e := brokertest.New(t)
		root := e.Root
		must(t, os.MkdirAll(filepath.Join(root, "node_modules", "dep"), 0o755))
		for i := range 30 {
			must(t, os.WriteFile(filepath.Join(root, "node_modules", "dep", fmt.Sprintf("f%d.js", i)), nil, 0o644))
		}
		must(t, os.WriteFile(filepath.Join(root, "node_modules", "dep", ".env"), []byte("TOKEN=dep-secret"), 0o644))
		e.Settings(t, `{"guard":{"max_entries":20}`+rule+`}`)
		c := e.Client()
		r := brokertest.Sh(t, c, e.Open(c), "cat node_modules/dep/.env")
		switch {
		case rule == "" && (r.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(r.GetContent(), "dep-secret")):
			t.Errorf("control, without the rule: %v", r)
		case rule != "" && (r.GetStatus() != execv1.Status_STATUS_FAILED || !strings.Contains(r.GetContent(), "more than 20") ||
			!strings.Contains(r.GetContent(), "read-deny rule") || strings.Contains(r.GetContent(), "dep-secret")):
			t.Errorf("with the rule, past the limit: %v", r)
		}
	}
}

// TestWriteBeforeTheFirstCommandWalksOnce: a write the rules allow before the session's first command is decided
// again after the guard's first walk, which leaves out what the read policy hides, as a command's does; so the
// command after it walks nothing again (the guard's options are the same), and the hidden folder is listed by
// neither.
func TestWriteBeforeTheFirstCommandWalksOnce(t *testing.T) {
	e := brokertest.New(t)
	for _, d := range []string{"pkg/sub", "private/inner", "vault"} {
		must(t, os.MkdirAll(filepath.Join(e.Root, d), 0o755))
	}
	e.Settings(t, `{"permissions":{"deny":["Read(**/private)","Read(/vault)"],"allow":["Write(**)"]}}`)
	c := e.Client()
	sid := e.Open(c)
	opens := watchFolderOpens(t, e.Root)
	res, qs, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("pkg/a.txt", "a\n")),
		execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 0 {
		t.Fatalf("the allowed write: %v %v (%d questions)", res, err, len(qs))
	}
	for run, want := range []int{1, 0} {
		if run == 1 {
			if r := brokertest.Sh(t, c, sid, "true"); r.GetStatus() != execv1.Status_STATUS_COMPLETED {
				t.Fatalf("command: %v", r)
			}
		}
		got := opens.take(t)
		if got["pkg/sub"] != want {
			t.Errorf("step %d: pkg/sub listed %d times, want %d (all: %v)", run, got["pkg/sub"], want, got)
		}
		for _, hidden := range []string{"private", "private/inner", "vault"} {
			if got[hidden] != 0 {
				t.Errorf("step %d: the hidden folder %s was listed %d times", run, hidden, got[hidden])
			}
		}
	}
}

// A project opened through a symlink (~/code -> /data/code) with a nested repository that has no hooks folder: the
// guard names the folder to make read-only by its real path, and the command runs (it failed: "not below the root").
func TestCommandInARootReachedThroughASymlinkWithANestedRepository(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := errors.Join(os.MkdirAll(filepath.Join(real, "sub", ".git", "objects"), 0o755),
		os.MkdirAll(filepath.Join(real, "sub", ".git", "refs"), 0o755), os.Symlink(real, link)); err != nil {
		t.Fatal(err)
	}
	brokertest.MustWrite(t, filepath.Join(real, "sub", ".git", "HEAD"), "ref: refs/heads/main\n")
	brokertest.MustWrite(t, filepath.Join(real, "sub", ".git", "config"), "[core]\n\trepositoryformatversion = 0\n")
	e := brokertest.NewIn(t, dir, link, filepath.Join(dir, "home"))
	c := e.Client()
	sid := e.Open(c)
	r := brokertest.Sh(t, c, sid, "echo ran; touch sub/.git/hooks/pre-commit 2>&1 || echo read-only")
	if r.GetStatus() != execv1.Status_STATUS_COMPLETED || !strings.Contains(r.GetContent(), "ran") ||
		!strings.Contains(r.GetContent(), "read-only") {
		t.Fatalf("the command in a root through a symlink: %v", r)
	}
	if fi, err := os.Stat(filepath.Join(real, "sub", ".git", "hooks")); err != nil || !fi.IsDir() {
		t.Errorf("the nested repository's hooks folder was not made to be read-only: %v", err)
	}
}
