// Which program runs the sandbox's helper stages: garuda-sandbox beside the broker's executable (a small binary that
// links this package and little else, so each start pays no init of grpc, protobuf or the MCP SDK), or, where it
// is absent, the broker itself; and the build check every helper makes before it reads anything.

package sandbox

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/internal/version"
)

// HelperName is the sandbox helper's binary, installed beside garuda-exec, and every helper's argv[0].
const HelperName = "garuda-sandbox"

// HelperFeature is the name of Report's row that says which program runs the helpers (HelperReport).
const HelperFeature = "sandbox helper"

// helperProtocol is the version of what passes between the broker and its helper (the argv below, helperSpec,
// helperStatus, probeResult, the holder's socket messages). Raise it with any change a helper of another build
// could misread; a change of the structs' fields changes the token by itself (helperShape).
const helperProtocol = 1

// refusedExit is the exit status of a helper that refused its start (another build's broker started it).
const refusedExit = 125

// helperMinFD is the lowest descriptor the broker keeps the helper's file at: above those a child is given (0 to 4)
// and those Go's fork moves them through, so that no dup2 in the child replaces it before its exec.
const helperMinFD = 32

// helperProgram is the program the broker starts its helpers with.
type helperProgram struct {
	path string // what is executed: /proc/self/fd/N (garuda-sandbox held open) or /proc/self/exe
	file string // the file it is, for people: garuda-sandbox's path, or the broker's own
	own  bool   // the broker itself: no garuda-sandbox beside it
	why  string // when own: why
	err  error  // a garuda-sandbox that is there but may not run: every helper start fails with it
}

// testHelperFile, when set before the first helper starts, is the garuda-sandbox a test uses instead of the one
// beside its executable (where a test binary has none).
var testHelperFile string

// helperProg resolves the program once, at the first helper's start. garuda-sandbox is opened (O_PATH) and run through
// that descriptor for the life of the broker: what runs is the file that was checked, even if the path is replaced
// later (defends against a helper swapped between the check and an exec, and keeps a running broker on the helper
// of its own install when an upgrade replaces the files).
var helperProg = sync.OnceValue(func() helperProgram {
	file := testHelperFile
	if file == "" {
		exe, err := os.Executable() // the real path: /proc/self/exe resolves every link
		if err != nil {
			return ownHelper(fmt.Sprintf("the broker's own path is unknown (%v)", err))
		}
		file = filepath.Join(filepath.Dir(exe), HelperName)
	}
	return resolveHelper(file)
})

// ownPrograms are the files of Garuda's programs that run outside any command's confinement: garuda-sandbox (the
// next command's pid 1), the broker's own executable and the front end beside it (the next start, as the user).
func ownPrograms() []string {
	out := brokerPrograms()
	if p := helperProg(); !p.own && p.err == nil {
		out = append(slices.Clip(out), p.file)
	}
	return out
}

// brokerPrograms are the broker's executable and garuda beside it (a missing one is skipped at the mount).
var brokerPrograms = sync.OnceValue(func() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, filepath.Join(filepath.Dir(exe), "garuda")}
})

// ownHelper is the broker itself as its helper.
func ownHelper(why string) helperProgram {
	exe, _ := os.Executable()
	return helperProgram{path: "/proc/self/exe", file: exe, own: true, why: why}
}

// resolveHelper opens and checks the garuda-sandbox at file; absent, the broker is its own helper.
func resolveHelper(file string) helperProgram {
	fd, err := unix.Open(file, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return ownHelper("no " + HelperName + " beside garuda-exec (" + file + ")")
	}
	fail := func(err error) helperProgram {
		return helperProgram{file: file, err: fmt.Errorf("sandbox helper %s: %w; reinstall Garuda (make install, or the "+
			"whole release archive), or remove %s to run the helper as garuda-exec itself", file, err, file)}
	}
	if err != nil {
		return fail(err)
	}
	if err := checkHelperFile(fd); err != nil {
		unix.Close(fd)
		return fail(err)
	}
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, helperMinFD)
	unix.Close(fd)
	if err != nil {
		return fail(fmt.Errorf("keep it open: %w", err))
	}
	return helperProgram{path: "/proc/self/fd/" + strconv.Itoa(high), file: file}
}

// checkHelperFile refuses a garuda-sandbox that is not an executable file, or that someone who cannot change
// garuda-exec could change (owned by another than root, garuda-exec's owner or the broker's user, or writable where
// garuda-exec is not): defends against a helper that is easier to replace than the broker beside it.
func checkHelperFile(fd int) error {
	var st, self unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return errors.New("not an executable file")
	}
	if err := unix.Stat("/proc/self/exe", &self); err != nil {
		return err
	}
	if st.Uid != 0 && st.Uid != self.Uid && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, neither root, garuda-exec's owner (uid %d) nor the broker's user", st.Uid, self.Uid)
	}
	if extra := st.Mode & 0o022 &^ self.Mode; extra != 0 {
		who := map[bool]string{true: "others", false: "its group"}[extra&0o002 != 0]
		return fmt.Errorf("writable by %s, which garuda-exec is not (mode %o)", who, st.Mode&0o777)
	}
	return nil
}

// helperCommand is the command that starts a helper stage with args after the build token; its environment is
// helperEnv (nothing of the broker's). It fails where garuda-sandbox is there but may not run (fail closed).
func helperCommand(stage string, args ...string) (*exec.Cmd, error) {
	p := helperProg()
	if p.err != nil {
		return nil, p.err
	}
	cmd := exec.Command(p.path)
	cmd.Args = helperArgv(stage, brokerToken(), args...)
	cmd.Env = helperEnv
	return cmd, nil
}

// helperArgv is a helper's argv. Its first four are the same in every build, so that a helper of any build can read
// the token and refuse a broker of another: the name, HelperArg, the stage, the broker's build token.
func helperArgv(stage, token string, args ...string) []string {
	return append([]string{HelperName, HelperArg, stage, token}, args...)
}

// brokerToken is the token the broker sends its helpers: its own (a test sends another build's).
var brokerToken = helperToken

// helperToken names this build's side of the helper protocol: the protocol, the shape of what is exchanged, and
// the version. A helper runs only for a broker whose token is its own.
var helperToken = sync.OnceValue(func() string {
	return fmt.Sprintf("%d.%08x/%s", helperProtocol, helperShape(), version.Version)
})

// helperShape is a hash of the fields (names and types) of what the broker and the helper exchange as JSON: a
// field added, removed or changed gives another token, even where helperProtocol was not raised.
func helperShape() uint32 {
	h := fnv.New32a()
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(h, "%s %s;", f.Name, f.Type)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type)
			}
		}
	}
	for _, v := range []any{helperSpec{}, helperStatus{}, probeResult{}} {
		t := reflect.TypeOf(v)
		fmt.Fprintf(h, "%s{", t.Name())
		walk(t)
	}
	return h.Sum32()
}

// HelperReport says which program runs the sandbox's helpers here, for the doctors: garuda-sandbox, or the broker
// itself and why (its starts are slower), or a garuda-sandbox that may not run (then every command is refused).
func HelperReport() Feature {
	p := helperProg()
	switch {
	case p.err != nil:
		return Feature{Name: HelperFeature, Detail: p.err.Error()}
	case p.own:
		return Feature{Name: HelperFeature, Enforced: true, Detail: "garuda-exec itself: " + p.why + "; each command's " +
			"start is slower (about 3 ms more CPU: the broker's whole package initialisation); install the three " +
			"binaries together (make install)"}
	}
	return Feature{Name: HelperFeature, Enforced: true, Detail: p.file + " (" + HelperName + " " + version.Version + ")"}
}

// HelperID names the helper's file and its state (size, time), for the broker's cached probe report: a helper
// installed, removed or replaced is probed afresh.
func HelperID() string {
	p := helperProg()
	if p.own {
		return "own"
	}
	var st unix.Stat_t
	if p.err != nil || unix.Stat(p.path, &st) != nil {
		return "unusable " + p.file
	}
	return fmt.Sprintf("%s|%d|%d|%d", p.file, st.Ino, st.Size, st.Mtim.Nano())
}

// checkToken refuses, before anything of the stage runs, a start by a broker of another build: it could send a
// spec this helper misreads. The refusal goes where that stage's broker reads first (the status pipe of init, the
// holder's socket, stderr), and the helper exits with refusedExit.
func checkToken(stage, token string) {
	if token == helperToken() {
		return
	}
	msg := mismatchMessage(token)
	var st unix.Stat_t
	switch {
	case stage == "init" && unix.Fstat(4, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO:
		// The one helperStatus field every build reads: never renamed.
		_, _ = unix.Write(4, []byte(`{"SetupError":`+strconv.Quote(msg)+"}\n"))
	case stage == "holder" && unix.Fstat(3, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK:
		_, _ = unix.Write(3, append([]byte{1}, msg...))
	default:
		fmt.Fprintln(os.Stderr, msg)
	}
	os.Exit(refusedExit)
}

// mismatchMessage says that this helper is of another build than the broker that started it, and what to do.
func mismatchMessage(token string) string {
	self, err := os.Executable()
	if err != nil {
		self = HelperName
	}
	proto, ver, ok := strings.Cut(token, "/")
	broker := "of another, unknown build"
	if ok {
		broker = ver + " (sandbox protocol " + proto + ")"
	}
	p, v, _ := strings.Cut(helperToken(), "/")
	return fmt.Sprintf("the sandbox helper %s is %s %s (sandbox protocol %s), but the garuda-exec that started it is %s: "+
		"nothing was run. Install the binaries of one build together (make install, or the whole release archive); if "+
		"Garuda was upgraded while it ran, restart the editor's agent", self, HelperName, v, p, broker)
}

// errHelperRefused is the error of a helper that refused its start (mismatchMessage says why).
type errHelperRefused struct{ msg string }

func (e errHelperRefused) Error() string { return e.msg }
