//go:build linux

package confine

import (
	"crypto/x509"
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// DNSFiles are the only files the confined front end may still read: name resolution for the provider's host.
var DNSFiles = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/services"}

// Self confines the calling process for good. It returns a message (for stderr, once) when the kernel has no
// Landlock: then only no_new_privs holds.
func Self() (warning string, err error) {
	// The TLS roots are read now, while files can still be read; crypto/x509 keeps them.
	if _, err := x509.SystemCertPool(); err != nil {
		warning = fmt.Sprintf("the system's TLS roots could not be loaded (%v)", err)
	}
	// Defends against gaining privileges through a set-uid program, should anything still run one.
	if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return warning, fmt.Errorf("set no_new_privs: %w", err)
	}
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return "this kernel has no Landlock: the front end runs unconfined (the broker's sandbox still applies)", nil
	}
	// Defends against a front end talked into acting on its own: no write, no execute, no reads but DNS files.
	// Only files are handled, so TCP to the model provider stays allowed.
	cfg := landlock.V7.BestEffort()
	if err := cfg.RestrictPaths(landlock.ROFiles(DNSFiles...).IgnoreIfMissing()); err != nil {
		return warning, fmt.Errorf("landlock: %w", err)
	}
	return warning, nil
}
