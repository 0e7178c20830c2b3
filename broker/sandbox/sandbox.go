package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"
)

// HelperArg is the hidden first argument with which the broker starts garuda-sandbox (or, where that is absent,
// re-executes itself) as the sandbox helper.
const HelperArg = "__garuda-sandbox-helper"

// Default and maximum wall-clock limits of a command.
const (
	DefaultTimeout = 2 * time.Minute
	MaxTimeout     = 10 * time.Minute
	// KeepOutput is how many bytes of output Result.Output keeps (head and tail together).
	KeepOutput = 30000
	// MaxOutputFile is how much of a command's output Spec.OutputFile keeps: its first 64 MiB.
	MaxOutputFile = 64 << 20
	// TermGrace is how long a cancelled command has between SIGTERM and SIGKILL: the broker API's CancelGrace
	// (broker TestCancelGraceIsTheAPIs keeps the two equal).
	TermGrace = 2 * time.Second
	// ProcessLimit is the most processes and threads one command may have at once, unless Limits say fewer or more.
	ProcessLimit = 1024
	// MaxDefaultMemory caps the default memory limit (half of the machine's memory).
	MaxDefaultMemory = 16 << 30
)

// Limits are the resource limits of a command; a zero field takes its default.
type Limits struct {
	MemoryBytes int64 // each command, and all of this user's commands together; 0: DefaultMemory()
	Processes   int   // processes and threads of each command at once; 0: ProcessLimit
}

// DefaultMemory is the memory limit when none is set: half of the machine's memory, at most MaxDefaultMemory.
func DefaultMemory() int64 {
	if m := totalMemory() / 2; m > 0 && m < MaxDefaultMemory {
		return m
	}
	return MaxDefaultMemory
}

// withDefaults fills the fields of l that are not set.
func (l Limits) withDefaults() Limits {
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemory()
	}
	if l.Processes <= 0 {
		l.Processes = ProcessLimit
	}
	return l
}

// ProgramError is a command's program that could not be started in the sandbox (missing, not executable, not on
// the command's PATH): the command's fault, not the sandbox's. It unwraps to the kernel's answer to execve.
type ProgramError struct {
	Program string
	Why     string
	Errno   syscall.Errno // 0: not found on PATH
}

func (e *ProgramError) Error() string {
	hint := ""
	switch e.Errno {
	case syscall.ENOENT:
		hint = " (as the sandbox sees the files: hidden folders, such as Garuda's home, are not there)"
	case syscall.EACCES:
		hint = " (is it executable, in a folder commands may read?)"
	}
	return fmt.Sprintf("cannot run %s: %s%s", e.Program, e.Why, hint)
}

func (e *ProgramError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

var (
	// ErrUnavailable means the kernel lacks a protection the sandbox requires; the command was not run.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrShutdown, given as the cause of the context passed to Run, kills the command at once with no grace.
	ErrShutdown = errors.New("broker shutting down")
)

// Spec says what to run and how to confine it. The caller decides policy; the sandbox only enforces it.
type Spec struct {
	Command string // run as: bash -c Command (/bin/sh when /bin/bash is absent)
	// Argv, when set, is run instead of bash -c Command: its program found on the command's PATH (Env) as a shell
	// finds it, with these arguments as they are (no shell: nothing is expanded or split). Command still names it.
	Argv         []string
	Dir          string        // working folder (the project root or below)
	Root         string        // project root: writable unless ReadOnlyRoot
	ReadOnlyRoot bool          // plan mode: the root is read-only too
	Writable     []string      // extra writable folders (private TMPDIR, cache folders); must exist
	ReadOnly     []string      // protected paths (files or folders) made read-only; missing ones are skipped
	EnsureDirs   []string      // protected folders created empty if missing, then made read-only
	Hidden       []string      // secrets replaced by an empty read-only tmpfs (folders) or /dev/null (files)
	Reveal       []string      // folders inside Hidden ones shown read-only, the rest hidden whole (hideFolder)
	Env          []string      // the command's exact environment (see BaseEnv)
	Timeout      time.Duration // 0: DefaultTimeout; capped at MaxTimeout
	Unsandboxed  bool          // sandbox:false: scrubbed env and own pid namespace, no other confinement
	AllowWeaker  bool          // team policy allows running with what this kernel has (each gap becomes a Notice)
	Limits       Limits        // memory and process limits (sandboxed commands only)
	OnOutput     func(chunk []byte)
	OutputFile   string // where the output is saved (0600), its first MaxOutputFile bytes; empty: not saved
	// Proxy is the path of a unix socket of the broker's HTTP(S) proxy. A sandboxed command then gets a forwarder
	// to it on its network namespace's loopback (Forward) and the proxy variables (ProxyEnv); nothing else of the
	// network. Empty: no network at all. Needs a network namespace (else a Notice says there is no proxy).
	Proxy string
	// Stdin is the command's standard input; nil: /dev/null. The copy into the command ends at Stdin's EOF or when
	// the command ends, so a long-lived reader (an MCP client, a background process's input) must be closed by its
	// owner.
	Stdin io.Reader
	// Stdout, when set, takes the command's standard output apart from its standard error (an MCP server's protocol
	// stream, a hook's answer); the output, OnOutput and OutputFile then hold standard error only. It must not block
	// for ever: Run returns only once everything the command wrote has been taken.
	Stdout io.Writer
	// Network, when set, is the session's network namespace (NewNetwork): the command runs inside it, in pid and
	// mount namespaces of its own still, and reaches what the session's other commands listen on in its loopback.
	// nil: a network namespace of the command's own. Not used for Unsandboxed.
	Network *Network
	// UntilCancelled lifts the wall-clock limit: the command runs until it ends or ctx is cancelled (background
	// processes, MCP servers). Cancelling still gives it TermGrace between SIGTERM and SIGKILL.
	UntilCancelled bool
}

// Result is what a command did.
type Result struct {
	ExitCode   int
	Signaled   bool   // the command was ended by a signal (ExitCode is then 128+signal)
	Output     []byte // head and tail of stdout+stderr, with a note where bytes were cut
	Truncated  bool
	OutputPath string
	Duration   time.Duration
	TimedOut   bool
	Cancelled  bool
	Notices    []string // weaker-sandbox and fallback notices, one line each
	LimitsHit  []string // the resource limits the command reached, one sentence each
}

// Feature is one protection and whether this machine enforces it.
type Feature struct {
	Name     string
	Enforced bool
	Detail   string
}

// Report says what the sandbox enforces on this machine.
type Report struct{ Features []Feature }

// Missing names the protections that are not enforced, with their details.
func (r Report) Missing() []string {
	var out []string
	for _, f := range r.Features {
		if !f.Enforced {
			out = append(out, f.Name+" ("+f.Detail+")")
		}
	}
	return out
}

func effectiveTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTimeout
	}
	return min(d, MaxTimeout)
}

// shutdownRequested reports whether ctx was cancelled for a broker shutdown.
func shutdownRequested(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShutdown)
}

// systemSecretGlobs are hidden from every sandboxed command besides Spec.Hidden: a command run by a root broker keeps
// uid 0 (without capabilities), so it would otherwise read root-owned secrets such as password hashes and host
// keys. Glob patterns are expanded at each run.
var systemSecretGlobs = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd",
	"/etc/ssh/ssh_host_*_key", "/etc/ssl/private", "/root/.ssh", "/root/.aws", "/root/.docker", "/root/.netrc",
	"/root/.config/gh", "/root/.garuda", "/var/lib/docker", "/run/secrets",
}

// systemSecrets expands systemSecretGlobs to the paths that exist.
func systemSecrets() []string {
	var out []string
	for _, pat := range systemSecretGlobs {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}
