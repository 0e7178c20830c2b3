package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-runs itself as a helper process (go-plugin style) for what needs its own process: several
// brokers appending at once, a file-size limit, a private mount namespace with a tiny tmpfs.
const helperEnv = "GARUDA_AUDIT_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

func helperMain(mode string) int {
	dir := os.Getenv("AUDIT_DIR")
	switch mode {
	case "append":
		n, _ := strconv.Atoi(os.Getenv("AUDIT_N"))
		name := os.Getenv("AUDIT_BROKER")
		l, err := Open(dir, Options{Broker: name})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if os.Getenv("AUDIT_NO_REREAD") != "" {
			l.testStalePrev = true
		}
		for i := range n {
			r := Record{Event: EventExecution, Op: "bash", Input: fmt.Sprintf("%s/%d", name, i)}
			var err error
			if i%2 == 0 {
				err = l.Commit(r)
			} else {
				err = l.Note(r)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		if err := l.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case "fsize":
		// SIGXFSZ would kill the process; ignored, the write fails with EFBIG instead.
		signal.Ignore(syscall.SIGXFSZ)
		lim := &unix.Rlimit{Cur: 8192, Max: 8192}
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, lim); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 2
		}
		return fillUntilError(dir)
	case "tmpfs":
		// Private mount namespace (the parent asked for CLONE_NEWNS): nothing mounted here outlives this process.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			fmt.Fprintln(os.Stderr, "make / private:", err)
			return 2
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16k,mode=0700"); err != nil {
			fmt.Fprintln(os.Stderr, "mount tmpfs:", err)
			return 2
		}
		code := fillUntilError(filepath.Join(dir, "audit"))
		// Copy the log out of the tmpfs so that the parent can verify it.
		b, err := os.ReadFile(filepath.Join(dir, "audit", time.Now().UTC().Format(time.DateOnly)+".jsonl"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := os.WriteFile(os.Getenv("AUDIT_COPY"), b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return code
	}
	return 3
}

// fillUntilError commits records until one fails, then prints {"ok":N,"err":"..."} and exits 0; it exits 1 when no
// Commit ever failed (the limit did not bite: the test cannot pass).
func fillUntilError(dir string) int {
	l, err := Open(dir, Options{Broker: "b"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ok := 0
	for i := range 10000 {
		err = l.Commit(Record{Event: EventExecution, Op: "write_file", Input: fmt.Sprintf("file-%d.txt %s", i, strings.Repeat("x", 100))})
		if err != nil {
			break
		}
		ok++
	}
	out, _ := json.Marshal(map[string]any{"ok": ok, "err": fmt.Sprint(err), "efbig": errors.Is(err, syscall.EFBIG),
		"enospc": errors.Is(err, syscall.ENOSPC)})
	fmt.Println(string(out))
	if err == nil {
		return 1
	}
	return 0
}

func helper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func dayFile(dir string) string {
	return filepath.Join(dir, time.Now().UTC().Format(time.DateOnly)+".jsonl")
}

func readRecords(t *testing.T, path string) []Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// openWithOneRecord opens the log in dir (GARUDA_HOME's when empty), closed as the test ends, and commits one
// decision record to it.
func openWithOneRecord(t *testing.T, dir string) *Log {
	t.Helper()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.Commit(Record{Event: EventDecision}); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestCommitChainsAndVerifies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := Open(dir, Options{Broker: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	code := 2
	recs := []Record{
		{Session: "s1", Event: EventDecision, Op: "write_file", Input: "src/a.go", Verdict: "ask", Rule: "mode:build",
			Reason: "edits ask", AnsweredBy: "user:once"},
		{Session: "s1", Event: EventExecution, Op: "bash", Input: "go test ./... <&> \"quoted\"", Status: "failed",
			ExitCode: &code, DurationMS: 1234},
		{Session: "s1", Event: EventConsent, Detail: map[string]string{"z": "1", "a": "2"}},
	}
	for _, r := range recs {
		if err := l.Commit(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Note(Record{Session: "s1", Event: EventExecution, Op: "read_file", Input: "src/a.go"}); err != nil {
		t.Fatal(err)
	}
	// A Note is appended at once, before any fsync.
	if got := readRecords(t, dayFile(dir)); len(got) != 4 {
		t.Fatalf("records in the file right after Note = %d, want 4", len(got))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n, err := Verify(dayFile(dir))
	if err != nil || n != 4 {
		t.Fatalf("Verify = %d, %v; want 4, nil", n, err)
	}
	got := readRecords(t, dayFile(dir))
	if got[0].Prev != "" || got[1].Prev != got[0].Hash || got[3].Prev != got[2].Hash {
		t.Fatalf("chain not linked: %+v", got)
	}
	if got[1].Broker != "b1" || *got[1].ExitCode != 2 || got[1].Input != recs[1].Input || got[1].Time.IsZero() {
		t.Fatalf("record 2 = %+v", got[1])
	}
	if err := l.Commit(Record{Event: EventDecision}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close = %v, want ErrClosed", err)
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	openWithOneRecord(t, dir)
	for path, want := range map[string]os.FileMode{dir: 0o700, dayFile(dir): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
}

func TestDefaultDirUsesGarudaHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("GARUDA_HOME", home)
	openWithOneRecord(t, "")
	if _, err := Verify(dayFile(filepath.Join(home, "audit"))); err != nil {
		t.Fatal(err)
	}
}

func TestOneFilePerUTCDayEachWithItsOwnChain(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 2, 23, 59, 59, 0, time.FixedZone("X", 5*3600)) // 18:59:59 UTC
	l, err := Open(dir, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 2 {
		if err := l.Commit(Record{Event: EventDecision}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(6 * time.Hour) // 00:59:59 UTC the next day
	for range 3 {
		if err := l.Note(Record{Event: EventExecution}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]int{"2026-12-02.jsonl": 2, "2026-12-03.jsonl": 3} {
		if n, err := Verify(filepath.Join(dir, name)); err != nil || n != want {
			t.Errorf("Verify %s = %d, %v; want %d, nil", name, n, err, want)
		}
	}
}

func TestVerifyNamesTheFirstBrokenRecord(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := l.Commit(Record{Event: EventExecution, Op: "bash", Input: fmt.Sprintf("echo record-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	orig, err := os.ReadFile(dayFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n")[:10]
	tests := []struct {
		name   string
		edit   func() string
		line   int
		reason string
	}{
		{"one byte of a value", func() string { return strings.Replace(string(orig), "record-4", "record-X", 1) }, 5, "hash does not match"},
		{"one byte of a hash", func() string {
			b := []byte(string(orig))
			i := strings.Index(lines[0]+lines[1]+lines[2], `"hash":"`) // in line 1
			i += len(`"hash":"`) + 3
			b[i] ^= 1
			return string(b)
		}, 1, "hash does not match"},
		{"a record removed", func() string {
			return strings.Join(append(append([]string{}, lines[:3]...), lines[4:]...),
				"")
		}, 4, "prev does not match"},
		{"the first record removed", func() string { return strings.Join(lines[1:], "") }, 1, "first record's prev"},
		{"two records swapped", func() string {
			s := append([]string{}, lines...)
			s[6], s[7] = s[7], s[6]
			return strings.Join(s, "")
		}, 7, "prev does not match"},
		{"an unknown field added", func() string {
			return strings.Replace(string(orig), `{"time"`, `{"extra":1,"time"`,
				1)
		}, 1, "not a valid record"},
		{"a torn last line", func() string { return string(orig[:len(orig)-10]) }, 10, "incomplete line"},
		{"junk appended", func() string { return string(orig) + "hello\n" }, 11, "not a valid record"},
	}
	// Negative control: the untouched file verifies, so each failure below is the edit's doing.
	if n, err := Verify(dayFile(dir)); err != nil || n != 10 {
		t.Fatalf("untouched log: Verify = %d, %v", n, err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "log.jsonl")
			edited := tc.edit()
			if edited == string(orig) {
				t.Fatal("edit changed nothing")
			}
			if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
				t.Fatal(err)
			}
			n, err := Verify(p)
			var be *BrokenError
			if !errors.As(err, &be) || !errors.Is(err, ErrBroken) {
				t.Fatalf("Verify = %d, %v; want a BrokenError", n, err)
			}
			if be.Line != tc.line || !strings.Contains(be.Reason, tc.reason) || n != tc.line-1 {
				t.Fatalf("Verify = %d, %v; want line %d (%s) after %d good records", n, err, tc.line, tc.reason, tc.line-1)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("line %d", tc.line)) {
				t.Fatalf("error %q does not name line %d", err, tc.line)
			}
		})
	}
}

// checkAll verifies the file and that every "<broker>/<i>" input appears exactly once.
func checkAll(t *testing.T, path string, brokers []string, per int) {
	t.Helper()
	n, err := Verify(path)
	if err != nil {
		t.Fatalf("Verify after %d good records: %v", n, err)
	}
	seen := map[string]int{}
	for _, r := range readRecords(t, path) {
		seen[r.Input]++
	}
	for _, b := range brokers {
		for i := range per {
			if k := fmt.Sprintf("%s/%d", b, i); seen[k] != 1 {
				t.Fatalf("record %s appears %d times", k, seen[k])
			}
		}
	}
	if want := len(brokers) * per; n != want {
		t.Fatalf("%d records, want %d", n, want)
	}
}

func TestTwentyGoroutinesFiftyRecordsEach(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var wg sync.WaitGroup
	errs := make(chan error, 20*50)
	for g := range 20 {
		name := fmt.Sprintf("s%02d", g)
		names = append(names, name)
		wg.Go(func() {
			for i := range 50 {
				r := Record{Session: name, Event: EventExecution, Input: fmt.Sprintf("%s/%d", name, i)}
				if i%3 == 0 {
					errs <- l.Note(r)
				} else {
					errs <- l.Commit(r)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, dayFile(dir), names, 50)
}

func runAppenders(t *testing.T, dir string, procs, per int, env ...string) ([]string, error) {
	t.Helper()
	var names []string
	var cmds []*exec.Cmd
	for p := range procs {
		name := fmt.Sprintf("proc%d", p)
		names = append(names, name)
		cmd := helper(t, "append", append([]string{"AUDIT_DIR=" + dir, "AUDIT_BROKER=" + name, "AUDIT_N=" + strconv.Itoa(per)}, env...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var errs []error
	for _, c := range cmds {
		errs = append(errs, c.Wait())
	}
	return names, errors.Join(errs...)
}

func TestSeveralProcessesAppendToOneFile(t *testing.T) {
	dir := t.TempDir()
	// In-process goroutines append alongside the helper processes.
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var inErr error
	wg.Go(func() {
		for i := range 200 {
			if err := l.Commit(Record{Event: EventExecution, Input: fmt.Sprintf("inproc/%d", i)}); err != nil {
				inErr = err
				return
			}
		}
	})
	names, err := runAppenders(t, dir, 4, 200)
	wg.Wait()
	if err != nil || inErr != nil {
		t.Fatal(err, inErr)
	}
	l.Close()
	checkAll(t, dayFile(dir), append(names, "inproc"), 200)
}

// Negative control for the test above: appenders that chain to the last hash they wrote themselves instead of
// re-reading the file's tail under the lock break the chain, so the test above can fail.
func TestSeveralProcessesWithoutRereadBreakTheChain(t *testing.T) {
	dir := t.TempDir()
	if _, err := runAppenders(t, dir, 4, 50, "AUDIT_NO_REREAD=1"); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dayFile(dir)); !errors.Is(err, ErrBroken) {
		t.Fatalf("Verify = %v, want a broken chain", err)
	}
}

type fillResult struct {
	OK     int    `json:"ok"`
	Err    string `json:"err"`
	EFBIG  bool   `json:"efbig"`
	ENOSPC bool   `json:"enospc"`
}

func runFill(t *testing.T, cmd *exec.Cmd) fillResult {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v (stdout %q)", err, out)
	}
	var res fillResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	return res
}

func TestFileSizeLimitFailsClosed(t *testing.T) {
	dir := t.TempDir()
	res := runFill(t, helper(t, "fsize", "AUDIT_DIR="+dir))
	if !res.EFBIG || res.OK == 0 {
		t.Fatalf("helper: %+v; want some records, then an EFBIG error", res)
	}
	// The refused record is not in the file, nothing torn is left behind, and what was committed verifies.
	n, err := Verify(dayFile(dir))
	if err != nil || n != res.OK {
		t.Fatalf("Verify = %d, %v; want %d records", n, err, res.OK)
	}
	fi, _ := os.Stat(dayFile(dir))
	if fi.Size() > 8192 {
		t.Fatalf("file size %d over the limit", fi.Size())
	}
}

func TestFullTmpfsFailsClosed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := helper(t, "tmpfs", "AUDIT_DIR="+mnt, "AUDIT_COPY="+filepath.Join(dir, "copy.jsonl"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	res := runFill(t, cmd)
	if !res.ENOSPC || res.OK == 0 {
		t.Fatalf("helper: %+v; want some records, then ENOSPC", res)
	}
	n, err := Verify(filepath.Join(dir, "copy.jsonl"))
	if err != nil || n != res.OK {
		t.Fatalf("Verify = %d, %v; want %d records", n, err, res.OK)
	}
}

func TestFolderGoneFailsClosed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	l := openWithOneRecord(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(Record{Event: EventDecision}); err == nil {
		t.Fatal("Commit with the audit folder gone succeeded; want an error")
	}
	if err := l.Note(Record{Event: EventExecution}); err == nil {
		t.Fatal("Note with the audit folder gone succeeded; want an error")
	}
}

func TestFileReplacedIsReopened(t *testing.T) {
	dir := t.TempDir()
	l := openWithOneRecord(t, dir)
	if err := os.Rename(dayFile(dir), dayFile(dir)+".old"); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(Record{Event: EventDecision, Input: "after"}); err != nil {
		t.Fatal(err)
	}
	got := readRecords(t, dayFile(dir))
	if len(got) != 1 || got[0].Input != "after" || got[0].Prev != "" {
		t.Fatalf("new file = %+v; want one record starting a new chain", got)
	}
}

func TestTornTailIsNotChainedOver(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dayFile(dir), []byte(`{"time":"2026-12-02T00:00:00Z","event":"dec`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Commit(Record{Event: EventDecision}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Commit on a torn file = %v, want ErrCorrupt", err)
	}
}

func TestLongRecordsChainAcrossTailChunks(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := l.Commit(Record{Event: EventExecution, Input: strings.Repeat("y", 3000*i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if n, err := Verify(dayFile(dir)); err != nil || n != 5 {
		t.Fatalf("Verify = %d, %v", n, err)
	}
}
