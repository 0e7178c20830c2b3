//go:build linux

package confine

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// DNSFiles and TLSRoots are all the confined front end may still read: name resolution for the provider's host,
// and the system's public CA certificates (where crypto/x509 looks for them on Linux), read at the first HTTPS
// request rather than before confinement, which would cost every start about 10 ms.
var (
	DNSFiles = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/services"}
	TLSRoots = []string{"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates"}
)

// Self confines the calling process for good. It returns a message (for stderr, once) when the kernel has no
// Landlock: then only no_new_privs holds.
func Self() (warning string, err error) {
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
	roots := append([]string(nil), TLSRoots...)
	for _, v := range []string{"SSL_CERT_DIR", "SSL_CERT_FILE"} {
		for _, p := range filepath.SplitList(os.Getenv(v)) {
			if p != "" {
				roots = append(roots, p)
			}
		}
	}
	var files, dirs []string
	for _, p := range roots {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		} else if err == nil {
			files = append(files, p)
		}
	}
	files = append(files, DNSFiles...)
	if err := cfg.RestrictPaths(landlock.ROFiles(files...).IgnoreIfMissing(), landlock.RODirs(dirs...).IgnoreIfMissing()); err != nil {
		return warning, fmt.Errorf("landlock: %w", err)
	}
	return warning, nil
}
