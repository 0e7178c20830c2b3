package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// minLandlockABI is the lowest Landlock ABI with every right the sandbox relies on: refer (2), truncate (3),
// ioctl_dev (5), and abstract-socket and signal scoping (6).
const minLandlockABI = 6

// landlockABI returns the kernel's Landlock ABI version, 0 when Landlock is absent or disabled.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// fsRightsForABI lists the filesystem rights an ABI version can handle.
func fsRightsForABI(abi int) landlock.AccessFSSet {
	var s landlock.AccessFSSet
	if abi >= 1 {
		s |= (1 << 13) - 1
	}
	if abi >= 2 {
		s |= ll.AccessFSRefer
	}
	if abi >= 3 {
		s |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		s |= ll.AccessFSIoctlDev
	}
	if abi >= 9 {
		s |= ll.AccessFSResolveUnix
	}
	return s
}

// applyLandlock restricts the calling thread (and what it execs): read and execute everywhere, write only in the
// writable places, device nodes never created, ioctls on devices never allowed, abstract unix sockets and signals
// scoped to the sandbox. This defends against writes outside the project and IPC with processes outside.
func applyLandlock(hs *helperSpec) error {
	abi := min(landlockABI(), 11)
	if abi == 0 {
		return errors.New("landlock: not available in this kernel")
	}
	handled := fsRightsForABI(abi)
	cfg := landlock.Config{HandledAccessFS: handled}
	if abi >= 6 {
		cfg.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	if !hs.NetNS && abi >= 4 {
		// No network namespace: refuse every TCP bind and connect (UDP from ABI 10) instead.
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		if abi >= 10 {
			cfg.HandledAccessNet |= ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP
		}
	}
	read := landlock.AccessFSSet(ll.AccessFSExecute|ll.AccessFSReadFile|ll.AccessFSReadDir) & handled
	// Never make_char/make_block (device nodes bypass every file rule) nor ioctl_dev (TIOCSTI and friends).
	write := handled &^ landlock.AccessFSSet(ll.AccessFSMakeChar|ll.AccessFSMakeBlock|ll.AccessFSIoctlDev)
	rules := []landlock.Rule{landlock.PathAccess(read, "/")}
	var writable []string
	if !hs.ReadOnlyRoot {
		writable = append(writable, hs.Root)
	}
	writable = append(writable, hs.Writable...)
	if hs.PrivateShm {
		writable = append(writable, shmDir)
	}
	if len(writable) > 0 {
		rules = append(rules, landlock.PathAccess(write, writable...))
	}
	devWrite := landlock.AccessFSSet(ll.AccessFSWriteFile|ll.AccessFSReadFile|ll.AccessFSTruncate) & handled
	rules = append(rules, landlock.PathAccess(devWrite, "/dev/null", "/dev/zero", "/dev/full").IgnoreIfMissing())
	if hs.PrivatePts {
		// The sandbox's own terminals: opening a pty and setting its modes needs ioctls (TIOCSTI stays refused by
		// seccomp).
		rules = append(rules, landlock.PathAccess((devWrite|ll.AccessFSIoctlDev)&handled, ptmxPath, ptsDir))
	}
	fd, _, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: build ruleset (ABI %d, writable %v): %w", abi, writable, err)
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock: restrict self: %w", err)
	}
	return nil
}

// Securebits (linux/securebits.h); x/sys does not export them.
const (
	secbitNoroot                 = 1 << 0
	secbitNorootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLocke = 1 << 7
)

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 63
	}
	return n
}

// dropCaps clears the bounding, ambient, inheritable, permitted and effective sets of the calling thread and locks
// the securebits so that uid 0 gains nothing at execve. This defends the host against a root command changing the
// clock or hostname, loading modules, mounting, or bypassing file permissions.
func dropCaps() error {
	last := lastCap()
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocke
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("lock securebits: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear capability sets: %w", err)
	}
	return verifyNoCaps()
}

// verifyNoCaps fails unless every capability set of the calling thread is empty.
func verifyNoCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fmt.Errorf("capabilities still held after dropping: %+v", data)
		}
	}
	for c := 0; c <= lastCap(); c++ {
		if r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && r != 0 {
			return fmt.Errorf("capability %d still in the bounding set", c)
		}
	}
	return nil
}

// confine applies, to the calling (locked) thread, everything a sandboxed command runs under, in an order where
// each step still has the privilege it needs: no_new_privs, Landlock, capabilities, then seccomp.
func confine(hs *helperSpec) error {
	// no_new_privs defends against regaining privileges through setuid binaries or file capabilities.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if hs.Landlock {
		if err := applyLandlock(hs); err != nil {
			return err
		}
	}
	if err := dropCaps(); err != nil {
		return err
	}
	if hs.Seccomp {
		if err := installSeccomp(!hs.NetNS); err != nil {
			return err
		}
	}
	return nil
}
