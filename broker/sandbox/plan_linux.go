// The broker's check of a Spec against what the kernel offers, and the helper's spec built from it: fail closed, or
// a notice per gap where team policy allows a weaker sandbox.

package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/garuda-dev/garuda/internal/pathglob"
)

// plan checks s and what the kernel offers, and builds what the helper needs.
func plan(s Spec) (*helperSpec, []string, error) {
	hs := &helperSpec{
		Command: s.Command, Argv: s.Argv, Dir: s.Dir, Root: s.Root, ReadOnlyRoot: s.ReadOnlyRoot, Env: s.Env,
		Unsandboxed: s.Unsandboxed, NetNS: !s.Unsandboxed && !testNoNetNS,
	}
	if hs.Env == nil {
		hs.Env = []string{}
	}
	clean := func(what string, ps []string) ([]string, error) {
		var out []string
		for _, p := range ps {
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("sandbox %s path %q is not absolute", what, p)
			}
			out = append(out, filepath.Clean(p))
		}
		return out, nil
	}
	var err error
	if hs.Root == "" && s.Unsandboxed {
		hs.Root = "/"
	}
	if !filepath.IsAbs(hs.Root) {
		return nil, nil, fmt.Errorf("sandbox root %q is not absolute", s.Root)
	}
	hs.Root = filepath.Clean(hs.Root)
	if hs.Dir == "" {
		hs.Dir = hs.Root
	}
	if !filepath.IsAbs(hs.Dir) {
		return nil, nil, fmt.Errorf("sandbox working folder %q is not absolute", s.Dir)
	}
	if hs.Writable, err = clean("writable", s.Writable); err != nil {
		return nil, nil, err
	}
	if hs.ReadOnly, err = clean("read-only", append(append([]string{}, s.ReadOnly...), s.EnsureDirs...)); err != nil {
		return nil, nil, err
	}
	if hs.Hidden, err = clean("hidden", s.Hidden); err != nil {
		return nil, nil, err
	}
	if !s.Unsandboxed {
		hs.Hidden = append(hs.Hidden, systemSecrets()...)
	}
	if hs.Reveal, err = clean("revealed", s.Reveal); err != nil {
		return nil, nil, err
	}
	for _, r := range hs.Reveal {
		if !slices.ContainsFunc(hs.Hidden, func(h string) bool { rel, in := pathglob.Within(h, r); return in && rel != "" }) {
			return nil, nil, fmt.Errorf("sandbox revealed path %q is not inside a hidden folder", r)
		}
	}
	if s.Unsandboxed {
		return hs, nil, nil
	}
	var notices, missing []string
	abi := landlockABI()
	if testLandlockABI >= 0 {
		abi = testLandlockABI
	}
	switch {
	case abi >= minLandlockABI:
		hs.Landlock = true
	case abi > 0:
		hs.Landlock = true
		missing = append(missing, fmt.Sprintf("Landlock ABI %d < %d (no scoping of abstract sockets and signals)", abi, minLandlockABI))
	default:
		missing = append(missing, "Landlock (not in this kernel or disabled at boot)")
	}
	hs.Seccomp = seccompArchSupported
	if !hs.Seccomp {
		missing = append(missing, "seccomp filter (no syscall table for this architecture)")
	}
	if len(missing) > 0 {
		if !s.AllowWeaker {
			return nil, nil, fmt.Errorf("run %q: missing %s; run `garuda-exec doctor`: %w", s.Command, strings.Join(missing, ", "), ErrUnavailable)
		}
		for _, m := range missing {
			notices = append(notices, "weaker sandbox (team policy allows it): no "+m)
		}
	}
	if s.Proxy != "" {
		hs.ProxySocket = filepath.Clean(s.Proxy)
	}
	// Garuda's own programs where the command may write (Garuda installed in the project, or the home folder as the
	// project): read-only to it, which defends against a command changing a program that runs later outside any
	// sandbox (garuda-sandbox as the next command's pid 1; garuda-exec and garuda at the next start, as the user).
	writable := writablePlaces(hs)
	for _, f := range ownPrograms() {
		if slices.ContainsFunc(writable, func(w string) bool { _, in := pathglob.Within(w, f); return in }) {
			hs.ReadOnly = append(hs.ReadOnly, f)
		}
	}
	return hs, notices, nil
}

// testLandlockABI, when >= 0, stands in for the kernel's Landlock ABI in the broker's checks (tests of failing closed).
var testLandlockABI = -1

// testNoNetNS makes tests exercise the fallback for kernels that refuse a network namespace.
var testNoNetNS bool
