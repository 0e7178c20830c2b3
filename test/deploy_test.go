package test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// The units and the AppArmor profile of deploy/ (docs/deploy.md), checked as far as this machine allows.

const installedExec = "/usr/local/bin/garuda-exec" // where the units and the profile expect the broker

type unitFile struct {
	name string // the name systemd sees (a template is checked as one instance)
	path string // in deploy/
	user bool   // a user unit
}

var deployUnits = []unitFile{
	{name: "garuda-exec.service", path: "../deploy/garuda-exec.service", user: true},
	{name: "garuda-exec@1000.service", path: "../deploy/garuda-exec@.service"},
}

// unitValues reads the Key=Value lines of a unit's [Service] section, in order.
func unitValues(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not Key=Value: %q", path, line)
			}
			vals[k] = append(vals[k], strings.Trim(v, `"`))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vals
}

// specifiers maps the systemd specifiers the units use to folders of this test; %i is the instance (a uid).
func specifiers(dir, instance string) *strings.Replacer {
	return strings.NewReplacer(
		"%t", filepath.Join(dir, "run"),
		"%S", filepath.Join(dir, "state"),
		"%h", filepath.Join(dir, "home"),
		"%i", instance,
		"%%", "%",
	)
}

// runHere makes a unit's ExecStart runnable here: the built garuda-exec, the group gid and a managed policy in dir
// stand in for what cannot exist on this machine. It returns the socket --listen names ("" when none does).
func runHere(argv []string, dir, gid string) (sock string) {
	argv[0] = bins.exec
	for i := 2; i < len(argv)-1; i++ {
		switch argv[i] {
		case "--listen":
			sock = argv[i+1]
		case "--socket-group":
			argv[i+1] = gid
		case "--managed-policy":
			argv[i+1] = filepath.Join(dir, "managed-policy.json")
		}
	}
	return sock
}

// execStart expands a unit's ExecStart as systemd does: specifiers, then each bare $VAR word split at whitespace.
func execStart(t *testing.T, vals map[string][]string, spec *strings.Replacer) (argv, env []string) {
	t.Helper()
	vars := map[string]string{}
	for _, e := range vals["Environment"] {
		e = spec.Replace(e)
		k, v, _ := strings.Cut(e, "=")
		vars[k] = v
		env = append(env, e)
	}
	if len(vals["ExecStart"]) != 1 {
		t.Fatalf("want one ExecStart, got %q", vals["ExecStart"])
	}
	for _, w := range strings.Fields(spec.Replace(vals["ExecStart"][0])) {
		if strings.HasPrefix(w, "$") {
			v, ok := vars[w[1:]]
			if !ok {
				t.Fatalf("ExecStart uses %s, which no Environment= line sets", w)
			}
			argv = append(argv, strings.Fields(v)...)
			continue
		}
		if strings.ContainsAny(w, `$"'\`) {
			t.Fatalf("ExecStart word %q: this test does not expand it", w)
		}
		argv = append(argv, w)
	}
	return argv, env
}

// systemd-analyze verify accepts both units, with the broker's path pointing at the binary built for this run, and
// prints nothing (it reports unknown or misspelled keys as warnings and still exits 0).
func TestDeployUnitsVerify(t *testing.T) {
	needBins(t)
	sa := testenv.NeedCommand(t, "systemd-analyze", "systemd")
	for _, u := range deployUnits {
		t.Run(u.name, func(t *testing.T) {
			dir := t.TempDir()
			data, err := os.ReadFile(u.path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "ExecStart="+installedExec+" ") {
				t.Fatalf("%s: ExecStart does not run %s", u.path, installedExec)
			}
			// verify needs the ExecStart binary to exist: point it at this run's build.
			unit := filepath.Join(dir, u.name)
			if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(data), installedExec, bins.exec)), 0o644); err != nil {
				t.Fatal(err)
			}
			verify := func(path string) (string, error) {
				args := []string{"verify", path}
				if u.user {
					args = append([]string{"--user"}, args...)
				}
				cmd := exec.Command(sa, args...)
				// A user manager needs a runtime folder and a home; never the real ones.
				cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_RUNTIME_DIR=" + dir, "SYSTEMD_LOG_COLOR=0"}
				out, err := cmd.CombinedOutput()
				return strings.TrimSpace(string(out)), err
			}
			if out, err := verify(unit); err != nil || out != "" {
				t.Fatalf("systemd-analyze verify %s: %v\n%s", u.path, err, out)
			}
			// Negative control: a misspelled key in the same unit is reported, so silence above means something.
			bad := filepath.Join(t.TempDir(), u.name)
			os.WriteFile(bad, []byte(strings.Replace(strings.ReplaceAll(string(data), installedExec, bins.exec),
				"LockPersonality=yes", "LockPersonalty=yes", 1)), 0o644)
			if out, _ := verify(bad); !strings.Contains(out, "LockPersonalty") {
				t.Fatalf("control: systemd-analyze verify did not report a misspelled key: %q", out)
			}
		})
	}
}

// The broker runs from the units' own command lines: every flag and value they pass is accepted by the real
// garuda-exec, it serves the socket with the modes the docs promise, answers garuda doctor, and stops on SIGTERM
// (systemd's stop) with exit 0 and the socket removed. Only what cannot exist here is replaced: the specifiers'
// folders, the group garuda (this test's own group) and the managed policy (a temp path).
func TestDeployUnitCommandLines(t *testing.T) {
	needBins(t)
	for _, u := range deployUnits {
		t.Run(u.name, func(t *testing.T) {
			dir := openDir(t)
			vals := unitValues(t, u.path)
			argv, env := execStart(t, vals, specifiers(dir, strconv.Itoa(os.Getuid())))
			if argv[0] != installedExec || len(argv) < 2 || argv[1] != "serve" {
				t.Fatalf("ExecStart = %q, want %s serve ...", argv, installedExec)
			}
			sock := runHere(argv, dir, strconv.Itoa(os.Getgid()))
			if sock == "" {
				t.Fatalf("ExecStart %q has no --listen", argv)
			}
			// The units' --allow-uid (the instance's uid) must be this test's uid, or doctor below is refused.
			srv := exec.Command(argv[0], argv[1:]...)
			srv.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home")}, env...)
			log, done := startLogged(t, srv)
			exited := false
			defer func() {
				if !exited {
					srv.Process.Kill()
					<-done
				}
			}()
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "serving"); time.Sleep(10 * time.Millisecond) {
				select {
				case err := <-done:
					exited = true
					t.Fatalf("garuda-exec refused the unit's flags %q: %v\n%s", argv[1:], err, log)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("garuda-exec did not start with the unit's flags %q:\n%s", argv[1:], log)
				}
			}
			checkMode := func(path string, want os.FileMode) {
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != want {
					t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
				}
				if gid := fi.Sys().(*syscall.Stat_t).Gid; slices.Contains(argv, "--socket-group") && int(gid) != os.Getgid() {
					t.Errorf("%s: group %d, want the socket group %d", path, gid, os.Getgid())
				}
			}
			checkMode(filepath.Dir(sock), 0o750)
			checkMode(sock, 0o660)
			doc := exec.Command(bins.garuda, "doctor", "--broker", "unix://"+sock)
			doc.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + filepath.Join(dir, "client")}
			if out, err := doc.CombinedOutput(); err != nil || !strings.Contains(string(out), "broker answers  yes") {
				t.Fatalf("garuda doctor --broker unix://%s: %v\n%s\nbroker log:\n%s", sock, err, out, log)
			}
			srv.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				exited = true
				if err != nil {
					t.Fatalf("garuda-exec after SIGTERM: %v\n%s", err, log)
				}
			case <-time.After(15 * time.Second): // the units' TimeoutStopSec
				t.Fatalf("garuda-exec did not stop within TimeoutStopSec after SIGTERM\n%s", log)
			}
			if _, err := os.Lstat(sock); err == nil {
				t.Errorf("the socket %s is left after a clean stop", sock)
			}
			// Negative control: the binary refuses a flag it does not know, so starting above proves acceptance.
			bad := exec.Command(argv[0], append(append([]string{}, argv[1:]...), "--no-such-flag")...)
			bad.Env = srv.Env
			if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "no-such-flag") {
				t.Fatalf("control: garuda-exec serve accepted an unknown flag: %v\n%s", err, out)
			}
		})
	}
}

// unitsSay reports whether every unit sets key to value (the emulation below is only as good as this match).
func unitsSay(t *testing.T, key, value string) bool {
	t.Helper()
	for _, u := range deployUnits {
		if !slices.Contains(unitValues(t, u.path)[key], value) {
			return false
		}
	}
	return true
}

// The units' hardening leaves the sandbox whole. systemd cannot start units on this machine (it did not boot with
// systemd), so the test rebuilds what matters to the sandbox by hand around a real `garuda-exec doctor`: a non-root
// user (User=/a user unit), no_new_privs (NoNewPrivileges=), an empty capability bounding set
// (CapabilityBoundingSet=), a network namespace of its own (PrivateNetwork=), and read-only bind mounts that the
// kernel locks in the sandbox's user namespace (ProtectSystem=strict, ProtectHome=read-only). doctor must report
// the full sandbox. Negative control: /proc/sys covered read-only, as ProtectKernelTunables= does, makes the same
// doctor refuse commands — which is why the units leave that line out.
func TestDeployHardeningKeepsSandbox(t *testing.T) {
	needBins(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to build the units' mount namespace and switch to uid 65534")
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		testenv.NeedCommand(t, tool, "util-linux")
	}
	for k, v := range map[string]string{"NoNewPrivileges": "yes", "CapabilityBoundingSet": "", "PrivateNetwork": "yes",
		"ProtectSystem": "strict"} {
		if !unitsSay(t, k, v) {
			t.Fatalf("the units no longer match this emulation: %s=%s (update the test with the units)", k, v)
		}
	}
	for _, k := range []string{"ProtectKernelTunables", "ProtectKernelLogs"} {
		for _, u := range deployUnits {
			if v := unitValues(t, u.path)[k]; len(v) > 0 {
				t.Errorf("%s sets %s=%s: it covers files in /proc and the sandbox then refuses every command (see the control below)", u.path, k, v)
			}
		}
	}
	home := openDir(t)
	os.Chmod(home, 0o777)
	doctor := func(extraMounts string) (string, error) {
		var mounts []string
		for _, p := range []string{"/usr", "/etc", "/opt", "/boot", "/var", "/home", "/root"} {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				mounts = append(mounts, "mount --bind -o ro "+p+" "+p)
			}
		}
		if extraMounts != "" {
			mounts = append(mounts, extraMounts)
		}
		script := strings.Join(mounts, " && ") + ` && exec setpriv --reuid=65534 --regid=65534 --clear-groups ` +
			`--no-new-privs --bounding-set=-all --inh-caps=-all "$0" doctor`
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--net", "sh", "-c", script, bins.exec)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + filepath.Join(home, "garuda"), "HOME=" + home}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := doctor("")
	if err != nil || !strings.Contains(out, "Commands run in the full sandbox.") {
		t.Fatalf("garuda-exec doctor under the units' hardening: %v\n%s", err, out)
	}
	notEnforced := regexp.MustCompile(`(?m)^.*\S\s{2,}no\s{2,}.*$`)
	for _, line := range notEnforced.FindAllString(out, -1) {
		t.Errorf("not enforced under the units' hardening: %s", line)
	}
	out, err = doctor("mount --bind -o ro /proc/sys /proc/sys")
	if err == nil || !strings.Contains(out, "REFUSED") || !strings.Contains(out, "pid namespace") {
		t.Fatalf("control: with /proc/sys covered (ProtectKernelTunables=yes) the sandbox should lose its /proc "+
			"and refuse commands, so this test could not see a unit that breaks it: %v\n%s", err, out)
	}
}

// apparmor_parser parses the example profile (parse only: -Q skips the kernel, -K the cache). An AppArmor 3
// parser (Debian 12) does not know the AppArmor 4 lines (abi 4.0, userns), so they are left out there and the
// test says so.
func TestDeployAppArmorProfileParses(t *testing.T) {
	ap := testenv.NeedCommand(t, "apparmor_parser", "apparmor")
	data, err := os.ReadFile("../deploy/apparmor/garuda-exec")
	if err != nil {
		t.Fatal(err)
	}
	profile := string(data)
	if !strings.Contains(profile, "profile garuda-exec "+installedExec+" ") {
		t.Fatalf("the profile does not attach to %s, where the units run the broker", installedExec)
	}
	ver, _ := exec.Command(ap, "--version").Output()
	m := regexp.MustCompile(`version (\d+)\.`).FindSubmatch(ver)
	if m == nil {
		t.Fatalf("cannot read the version of %s: %q", ap, ver)
	}
	if major, _ := strconv.Atoi(string(m[1])); major < 4 {
		t.Logf("%s: the lines marked apparmor>=4 are left out of the parse", strings.SplitN(string(ver), "\n", 2)[0])
		var keep []string
		for _, l := range strings.Split(profile, "\n") {
			if !strings.HasSuffix(l, "# apparmor>=4") {
				keep = append(keep, l)
			}
		}
		profile = "abi <abi/3.0>,\n" + strings.Join(keep, "\n")
	}
	parse := func(text string) (string, error) {
		p := filepath.Join(t.TempDir(), "garuda-exec")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(ap, "-Q", "-K", p).CombinedOutput()
		return string(out), err
	}
	if out, err := parse(profile); err != nil {
		t.Fatalf("apparmor_parser -Q -K deploy/apparmor/garuda-exec: %v\n%s", err, out)
	}
	// Negative control: the parser rejects a broken rule, so passing above means the profile was checked.
	if out, err := parse(strings.Replace(profile, "capability setpcap,", "capability setpcap", 1)); err == nil {
		t.Fatalf("control: apparmor_parser accepted a rule without its comma:\n%s", out)
	}
}

// deployRestrictEnv turns this test binary into a helper (TestDeployHelperProcess): it restricts itself as one
// systemd line would, runs its arguments and prints their exit status.
const deployRestrictEnv = "GARUDA_DEPLOY_RESTRICT"

func TestDeployHelperProcess(t *testing.T) {
	what := os.Getenv(deployRestrictEnv)
	if what == "" {
		t.Skip("a helper process of TestDeployLeftOutLines")
	}
	args := flag.Args()
	switch what {
	case "mdwe":
		// What MemoryDenyWriteExecute=yes does (systemd 256+ uses this prctl; older ones a seccomp filter that
		// refuses at least as much): no mapping may become executable after it was writable.
		if err := unix.Prctl(unix.PR_SET_MDWE, unix.PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0); err != nil {
			fmt.Printf("helper-unsupported: PR_SET_MDWE: %v\n", err)
			return
		}
	case "unixonly":
		// What RestrictAddressFamilies=AF_UNIX does: socket() of any other family fails with EAFNOSUPPORT.
		prog, err := bpf.Assemble([]bpf.Instruction{
			bpf.LoadAbsolute{Off: 0, Size: 4}, // the syscall number
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: 3},
			bpf.LoadAbsolute{Off: 16, Size: 4}, // socket's first argument, the family
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		})
		if err != nil {
			t.Fatal(err)
		}
		filter := make([]unix.SockFilter, len(prog))
		for i, in := range prog {
			filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
		}
		fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		// TSYNC: every thread of this process, so whichever one starts the child passes the filter on.
		if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
			uintptr(unsafe.Pointer(&fprog))); errno != 0 {
			fmt.Printf("helper-unsupported: seccomp: %v\n", errno)
			return
		}
	default:
		t.Fatalf("unknown restriction %q", what)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.Run()
	fmt.Printf("\nhelper-status=%v\n", cmd.ProcessState)
}

// restricted runs args under one systemd restriction (see TestDeployHelperProcess) and returns their output and
// exit status ("exit status 0", "signal: trace/breakpoint trap", …).
func restricted(t *testing.T, what string, env []string, args ...string) (out, status string) {
	t.Helper()
	wd, _ := os.Getwd()
	cmd := exec.Command(bins.self, append([]string{"-test.run=^TestDeployHelperProcess$", "--"}, args...)...)
	cmd.Dir = wd
	// An empty PATH: the helper's TestMain then fails to build the binaries at once (it needs none of them), and
	// args must name absolute paths.
	cmd.Env = append([]string{"PATH=" + t.TempDir(), deployRestrictEnv + "=" + what}, env...)
	b, err := cmd.CombinedOutput()
	out = string(b)
	if m := regexp.MustCompile(`helper-unsupported: (.*)`).FindStringSubmatch(out); m != nil {
		t.Skipf("this kernel cannot apply %s: %s", what, m[1])
	}
	m := regexp.MustCompile(`helper-status=(.*)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("helper %s: %v\n%s", what, err, out)
	}
	return out, m[1]
}

// Two lines the usual hardening advice asks for are left out of the units, because they are inherited by every
// command: each subtest shows what the line would break, with the same run without it as the control.
func TestDeployLeftOutLines(t *testing.T) {
	needBins(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the broker as uid 65534")
	}
	home := openDir(t)
	os.Chmod(home, 0o777)
	env := []string{"GARUDA_HOME=" + filepath.Join(home, "garuda")}
	setpriv := testenv.NeedCommand(t, "setpriv", "util-linux")
	asNobody := []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bins.exec, "doctor"}

	// MemoryDenyWriteExecute=yes: harmless to Go and the sandbox, fatal to a JIT such as node's.
	t.Run("MemoryDenyWriteExecute", func(t *testing.T) {
		if !unitsSay(t, "MemoryDenyWriteExecute", "no") {
			t.Fatal("a unit no longer sets MemoryDenyWriteExecute=no: update this test and docs/deploy.md")
		}
		if out, status := restricted(t, "mdwe", env, asNobody...); status != "exit status 0" || !strings.Contains(out, "full sandbox") {
			t.Errorf("garuda-exec doctor under MemoryDenyWriteExecute: %s\n%s", status, out)
		}
		node := testenv.NeedCommand(t, "node", "nodejs")
		code := `let s = 0; for (let i = 0; i < 1e6; i++) s += i; console.log("jit ok", s)`
		if out, err := exec.Command(node, "-e", code).CombinedOutput(); err != nil || !strings.Contains(string(out), "jit ok") {
			t.Fatalf("control: node does not run even unrestricted: %v\n%s", err, out)
		}
		out, status := restricted(t, "mdwe", env, node, "-e", code)
		if status == "exit status 0" || strings.Contains(out, "jit ok") {
			t.Errorf("node ran under MemoryDenyWriteExecute, so the units could enable it: %s\n%s", status, out)
		}
		t.Logf("node under MemoryDenyWriteExecute: %s", status)
	})

	// RestrictAddressFamilies=AF_UNIX: the sandbox cannot bring up a command's loopback and refuses every command.
	t.Run("RestrictAddressFamilies=AF_UNIX", func(t *testing.T) {
		if !unitsSay(t, "RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6") {
			t.Fatal("a unit no longer allows AF_INET: update this test and docs/deploy.md")
		}
		cmd := exec.Command(asNobody[0], asNobody[1:]...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "full sandbox") {
			t.Fatalf("control: the full sandbox is not there even unrestricted: %v\n%s", err, out)
		}
		out, status := restricted(t, "unixonly", env, asNobody...)
		if status == "exit status 0" || !strings.Contains(out, "REFUSED") || !strings.Contains(out, "network namespace") {
			t.Errorf("under AF_UNIX-only sockets the sandbox still ran commands, so the units could use it: %s\n%s", status, out)
		}
	})
}

// The system unit's model, run from its own command line: the broker as a dedicated non-root user (65534 stands
// for garuda-exec) with the socket group (gid 4242 stands for garuda) serves its instance's uid (65533) and no one
// else. A member of the group with another uid reaches the socket (the control shows the kernel lets it connect)
// and is refused by SO_PEERCRED, with the refusal logged; a uid outside the group cannot even open the socket.
// The client sees the non-root broker's full sandbox.
func TestDeploySystemUnitServesOnlyItsUser(t *testing.T) {
	needBins(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the broker and its clients as other uids")
	}
	const brokerUID, clientUID, otherUID, outsiderUID, socketGID = "65534", "65533", "65532", "65531", "4242"
	dir := openDir(t)
	argv, env := execStart(t, unitValues(t, deployUnits[1].path), specifiers(dir, clientUID))
	sock := runHere(argv, dir, socketGID)
	// What systemd prepares: the state folder (StateDirectory=, 0700) and the socket's folder (RuntimeDirectory=,
	// 0750), both owned by the broker's user; their parents are root's.
	for d, mode := range map[string]os.FileMode{filepath.Join(dir, "state", "garuda-exec", clientUID): 0o700, filepath.Dir(sock): 0o750} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(d, 65534, 65534)
		os.Chmod(d, mode)
	}
	env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "state")}, env...)
	// SupplementaryGroups=garuda is needed: without the group the broker cannot give the socket to it, and says so.
	alone := exec.Command("setpriv", append([]string{"--reuid=" + brokerUID, "--regid=" + brokerUID, "--clear-groups"}, argv...)...)
	alone.Env = env
	if out, err := alone.CombinedOutput(); err == nil || !strings.Contains(string(out), "group "+socketGID) {
		t.Errorf("the broker started without being in its socket group: %v\n%s", err, out)
	}
	srv := exec.Command("setpriv", append([]string{"--reuid=" + brokerUID, "--regid=" + brokerUID, "--groups=" + socketGID}, argv...)...)
	srv.Env = env
	log, done := startLogged(t, srv)
	defer func() { srv.Process.Signal(syscall.SIGTERM); <-done }()
	if !log.WaitFor("serving", 10*time.Second) {
		t.Fatalf("garuda-exec did not start as uid %s with the unit's flags %q:\n%s", brokerUID, argv[1:], log)
	}
	clientHome := filepath.Join(dir, "client")
	os.MkdirAll(clientHome, 0o777)
	os.Chmod(clientHome, 0o777)
	client := func(uid string, groups ...string) (string, error) {
		args := []string{"--reuid=" + uid, "--regid=" + uid}
		if len(groups) > 0 {
			args = append(args, "--groups="+strings.Join(groups, ","))
		} else {
			args = append(args, "--clear-groups")
		}
		cmd := exec.Command("setpriv", append(args, bins.garuda, "doctor", "--broker", "unix://"+sock)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + clientHome}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := client(clientUID, socketGID)
	if err != nil || !strings.Contains(out, "broker answers  yes") || !strings.Contains(out, "uid "+brokerUID) {
		t.Fatalf("uid %s (the instance) was not served by the broker running as %s: %v\n%s\nbroker log:\n%s", clientUID, brokerUID, err, out, log)
	}
	if !strings.Contains(out, "commands  will run in the sandbox") {
		t.Errorf("the non-root broker's sandbox is not whole:\n%s", out)
	}
	// Control: the socket's modes let another member of the group connect at the socket level...
	raw := exec.Command("setpriv", "--reuid="+otherUID, "--regid="+otherUID, "--groups="+socketGID, bins.self)
	raw.Env = []string{"GARUDA_TEST_CONNECT=" + sock}
	if out, err := raw.CombinedOutput(); err != nil {
		t.Fatalf("control: uid %s of the socket group could not connect, so this test would not show the SO_PEERCRED "+
			"check: %v\n%s", otherUID, err, out)
	}
	// ...but the broker refuses it by its uid, and says so in its log (the journal).
	if out, err := client(otherUID, socketGID); err == nil || strings.Contains(out, "broker answers  yes") {
		t.Fatalf("uid %s was served, though the unit allows only %s:\n%s", otherUID, clientUID, out)
	}
	if !log.WaitFor("uid="+otherUID, 5*time.Second) || !strings.Contains(log.String(), "refused a connection") {
		t.Errorf("the refusal of uid %s is not logged:\n%s", otherUID, log)
	}
	// Outside the group, the socket's folder (0750) keeps the uid from even trying.
	if out, err := client(outsiderUID); err == nil || !strings.Contains(out, "permission denied") {
		t.Fatalf("uid %s outside the socket group: %v\n%s", outsiderUID, err, out)
	}
}
