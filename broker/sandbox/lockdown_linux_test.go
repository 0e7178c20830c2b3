// The mount lockdown: no metadata change outside the writable places, no device but the safe ones, no sysctl write.

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAttackMetadataOutsideRoot: Landlock does not cover chmod, utimes or extended attributes; outside the
// writable places every mount is read-only, so none of them changes a file there.
// Found by red team.
func TestAttackMetadataOutsideRoot(t *testing.T) {
	f := newFixture(t)
	victim := filepath.Join(f.outside, "victim")
	must(t, os.WriteFile(victim, []byte("v"), 0o600))
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	before, err := os.Stat(victim)
	must(t, err)
	attacks := map[string]string{
		"chmod a file":      "chmod 0666 " + shq(victim),
		"chmod a folder":    "chmod 0777 " + shq(f.outside),
		"chmod the home":    "chmod 0777 " + shq(f.home),
		"set times":         "touch -d 2001-01-01 " + shq(victim),
		"set an xattr":      attackCmd(t, "setxattr", victim),
		"chmod in /tmp":     "chmod 0777 " + shq(f.base),
		"chmod in the root": "chmod 0700 . && chmod 0755 .", // the root itself stays writable
	}
	for name, cmd := range attacks {
		r := f.sandboxed(cmd)
		if name == "chmod in the root" {
			if r.ExitCode != 0 {
				t.Errorf("%s: %q", name, r.Output)
			}
			continue
		}
		expectDenied(t, name, r)
	}
	after, err := os.Stat(victim)
	must(t, err)
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("victim changed from the sandbox: mode %v -> %v, mtime %v -> %v", before.Mode(), after.Mode(), before.ModTime(), after.ModTime())
	}
	for _, d := range []string{f.outside, f.home, f.base} {
		if fi, _ := os.Stat(d); fi.Mode().Perm() == 0o777 {
			t.Errorf("%s made world-writable from the sandbox", d)
		}
	}
	if n, _ := unix.Getxattr(victim, "user.garuda", make([]byte, 16)); n > 0 {
		t.Errorf("xattr set on the victim from the sandbox")
	}
	// Negative control: without the sandbox each works.
	for _, name := range []string{"chmod a file", "set times", "set an xattr"} {
		expectWorked(t, name, f.unsandboxed(attacks[name]))
	}
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o666 || !fi.ModTime().Equal(old) {
		t.Errorf("negative control: mode %v mtime %v", fi.Mode(), fi.ModTime())
	}
}

// TestAttackDeviceNodes: Landlock lets a command read every device node (raw disks, consoles, other users'
// terminals, a node planted anywhere); only null, zero, full, random, urandom and tty can be opened.
// Found by red team.
func TestAttackDeviceNodes(t *testing.T) {
	f := newFixture(t)
	r := f.sandboxed("cat /dev/null; head -c1 /dev/zero >/dev/null && head -c1 /dev/urandom >/dev/null && " +
		"head -c1 /dev/random >/dev/null && echo x > /dev/full; echo done")
	if out(r) != "bash: line 1: echo: write error: No space left on device\ndone" {
		t.Errorf("everyday devices: %q", r.Output)
	}
	if isRoot() {
		// A node outside /dev (as in a container's root file system), of a device that is not on the list.
		node := filepath.Join(f.outside, "vcs")
		must(t, unix.Mknod(node, unix.S_IFCHR|0o600, int(unix.Mkdev(7, 0))))
		expectDenied(t, "open a planted device node", f.sandboxed(attackCmd(t, "open-read", node)))
		expectWorked(t, "open a planted device node", f.unsandboxed(attackCmd(t, "open-read", node)))
	}
	// Host devices this user may open: the console's screen for root, a terminal or a disk for a user in tty or disk.
	tried := 0
	for _, dev := range []string{"/dev/vcs", "/dev/vcsa", "/dev/tty1", "/dev/console", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/kmsg"} {
		if unix.Access(dev, unix.R_OK) != nil {
			continue
		}
		if r := f.unsandboxed(attackCmd(t, "open-read", dev)); r.ExitCode != 0 {
			continue // the kernel refuses it anyway (a busy disk, dmesg_restrict)
		}
		tried++
		expectDenied(t, "open "+dev, f.sandboxed(attackCmd(t, "open-read", dev)))
	}
	t.Logf("%d host devices opened without the sandbox and tried in it", tried)
}

// TestAttackSysctlWrite: uid 0 without capabilities may write sysctls (hostname, core_pattern) as far as file
// permissions go; Landlock and the read-only /proc keep them unchanged.
// Found by red team.
func TestAttackSysctlWrite(t *testing.T) {
	if !isRoot() {
		t.Skip("sysctls are root's: nothing to write as another user")
	}
	f := newFixture(t)
	h, _ := os.Hostname()
	expectDenied(t, "write kernel.hostname", f.sandboxed("echo garuda-pwned > /proc/sys/kernel/hostname"))
	if h2, _ := os.Hostname(); h2 != h {
		t.Fatalf("hostname changed to %q", h2)
	}
	// Negative control, in a UTS namespace of its own: the file permissions let uid 0 write it.
	expectWorked(t, "write kernel.hostname", f.unsandboxed("unshare --uts sh -c 'echo garuda-pwned > /proc/sys/kernel/hostname'"))
}
