package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
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

// landlockRuleset builds the command's Landlock ruleset (the child restricts itself with it): read and execute
// everywhere, write only in the writable places, device nodes never created, ioctls on devices never allowed,
// abstract unix sockets and signals scoped to the sandbox. This defends against writes outside the project and IPC
// with processes outside.
func landlockRuleset(hs *helperSpec) (int, error) {
	abi := min(landlockABI(), 11)
	if abi == 0 {
		return -1, errors.New("landlock: not available in this kernel")
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
		return -1, fmt.Errorf("landlock: build ruleset (ABI %d, writable %v): %w", abi, writable, err)
	}
	if fd < 0 { // no ruleset would mean no Landlock at all: fail closed
		return -1, fmt.Errorf("landlock: no ruleset built (ABI %d)", abi)
	}
	return fd, nil
}

// lastCap is the highest capability number of this kernel.
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
