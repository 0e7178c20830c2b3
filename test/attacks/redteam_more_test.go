package attacks

// A second red-team pass over the broker, as a compromised front end (any message, "allow" to every question).
// "FOUND AND FIXED" tests failed before their fix (the comment says what broke); "HELD" tests add coverage of
// attacks the protections already stopped. Each has a control that shows the attack reached the check.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

func grepOp(pattern, mode string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: pattern, OutputMode: mode}}}
}

func globOp(pattern string) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: pattern}}}
}

func editOp(path, old, new string, all bool) *execv1.Start {
	return &execv1.Start{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: path, OldString: old, NewString: new, ReplaceAll: all}}}
}

// within runs one call answering every question with ch, and fails when it takes longer than d (the broker is
// then still busy with it: the cleanup may have to wait for it to end).
func within(t *testing.T, c execv1.ExecServiceClient, sid string, op *execv1.Start, ch execv1.Choice, d time.Duration) (*execv1.Result, error) {
	t.Helper()
	cx, cancel := context.WithTimeout(ctx(t), d)
	defer cancel()
	began := time.Now()
	res, _, err := run(t, start(t, c, cx, sid, op), ch)
	if status.Code(err) == codes.DeadlineExceeded {
		t.Errorf("%v: still running after %v (the broker is stuck on it)", op, time.Since(began).Round(time.Millisecond))
	}
	return res, err
}

// leaked reports whether a call reached a secret: its content shows it, or a write landed.
func leaked(res *execv1.Result, secret string) bool {
	return strings.Contains(res.GetContent(), secret)
}

// FOUND AND FIXED. OpenSession refused "/" and $GARUDA_HOME only as spelled: a symlink to "/" (or to Garuda's home)
// opened as a root, and every path below it is "inside the root", so reads of $GARUDA_HOME/credentials were allowed
// without a question (the $GARUDA_HOME rule compares paths, and the symlink's spelling is not $GARUDA_HOME's).
// Control: the broker refuses "/" itself, and a plain open through the link reads the key.
func TestRedTeamSymlinkToSlashOrHomeAsRoot(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.home, "credentials"), `{"anthropic":"sk-ant-slash-0001"}`)
	base := t.TempDir()
	slash, home, audit := filepath.Join(base, "slash"), filepath.Join(base, "home"), filepath.Join(base, "audit")
	os.MkdirAll(filepath.Join(e.home, "audit"), 0o700)
	for link, to := range map[string]string{slash: "/", home: e.home, audit: filepath.Join(e.home, "audit")} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	c := e.client()
	for _, root := range []string{slash, home, audit, slash + "/.", home + "/"} {
		r, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: root})
		if status.Code(err) == codes.InvalidArgument {
			continue
		}
		t.Errorf("root %s (a symlink to / or $GARUDA_HOME) opened: %v", root, err)
		if err != nil {
			continue
		}
		cred := filepath.Join(r.Root, strings.TrimPrefix(e.home, "/"), "credentials")
		if root != slash {
			cred = filepath.Join(r.Root, "credentials")
		}
		res, _, _ := run(t, start(t, c, ctx(t), r.SessionId, read(cred)), execv1.Choice_CHOICE_ONCE)
		if leaked(res, "sk-ant-slash") {
			t.Errorf("and read_file %s read Garuda's key: %s", cred, res.GetContent())
		}
	}
	if _, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: "/"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("control: / itself opened: %v", err)
	}
	if !strings.Contains(fileText(filepath.Join(slash, e.home, "credentials")), "sk-ant-slash") {
		t.Fatal("control: a plain open through the link does not read the key")
	}
}

// FOUND AND FIXED. With the root spelled through a symlink (root = /x/link, link -> /x/real) and Garuda's home inside
// the real folder, every file tool saw $GARUDA_HOME under the link's spelling, which no rule named: read_file and
// grep read the key, glob listed it and write_file (allowed by the front end) wrote a team policy.json into
// $GARUDA_HOME. Control: the same root by its real name is held (TestRedTeamGarudaHomeInsideTheRoot), and a
// plain open through the link reads the key.
func TestRedTeamSymlinkedRootReachesGarudaHome(t *testing.T) {
	base := t.TempDir()
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	home := filepath.Join(real, "ghome")
	mustWrite(t, filepath.Join(home, "credentials"), `{"anthropic":"sk-ant-linked-0002"}`)
	mustWrite(t, filepath.Join(real, "main.go"), "package main\n")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := newEnvAt(t, link, home)
	c := e.client()
	r, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: link})
	if err != nil {
		t.Fatal(err)
	}
	sid := r.SessionId
	for _, op := range []*execv1.Start{
		read("ghome/credentials"),
		read(filepath.Join(link, "ghome", "credentials")),
		{Op: &execv1.Start_AttachMention{AttachMention: &execv1.AttachMention{Path: "ghome/credentials"}}},
		grepOp("sk-ant", "content"),
		globOp("**/cred*"),
		write("ghome/policy.json", `{"permissions":{"allow":["Bash"]}}`),
		editOp("ghome/credentials", "sk-ant", "sk-xxx", false),
	} {
		res, _, err := run(t, start(t, c, ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if leaked(res, "sk-ant-linked") || leaked(res, "credentials") && res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("%v reached Garuda's home through the symlinked root: %.200s", op, res.GetContent())
		}
	}
	if res := sh(t, c, sid, "cat ghome/credentials; cat "+link+"/ghome/credentials; echo x > ghome/credentials; true"); leaked(res, "sk-ant-linked") {
		t.Errorf("a command read Garuda's key through the symlinked root: %s", res.GetContent())
	}
	if _, err := os.Stat(filepath.Join(home, "policy.json")); err == nil {
		t.Error("write_file wrote $GARUDA_HOME/policy.json through the symlinked root")
	}
	if !strings.Contains(fileText(filepath.Join(home, "credentials")), "sk-ant-linked") {
		t.Error("the key was changed")
	}
	if !strings.Contains(fileText(filepath.Join(link, "ghome", "credentials")), "sk-ant-linked") {
		t.Fatal("control: a plain open through the link does not read the key")
	}
	// Control: an ordinary file of the symlinked root is read without a question.
	if res, qs, _ := run(t, start(t, c, ctx(t), sid, read("main.go")), execv1.Choice_CHOICE_DENY); !strings.Contains(res.GetContent(), "package main") || len(qs) != 0 {
		t.Fatalf("control: main.go: %v (%d questions)", res, len(qs))
	}
}

// FOUND AND FIXED. The same with $GARUDA_HOME configured through a symlink (GARUDA_HOME=/x/hl/ghome, hl -> /x/real)
// and the root given by its real name /x/real: the rule compared the real paths with the link's spelling.
// Control: a plain open reads the key.
func TestRedTeamGarudaHomeSpelledThroughASymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	mustWrite(t, filepath.Join(real, "ghome", "credentials"), `{"anthropic":"sk-ant-homelink-0003"}`)
	if err := os.Symlink(real, filepath.Join(base, "hl")); err != nil {
		t.Fatal(err)
	}
	e := newEnvAt(t, real, filepath.Join(base, "hl", "ghome"))
	c := e.client()
	sid := e.open(c)
	for _, op := range []*execv1.Start{read("ghome/credentials"), grepOp("sk-ant", "content"), write("ghome/policy.json", "{}")} {
		res, _, err := run(t, start(t, c, ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if leaked(res, "sk-ant-homelink") {
			t.Errorf("%v read Garuda's key: %.200s", op, res.GetContent())
		}
	}
	if _, err := os.Stat(filepath.Join(real, "ghome", "policy.json")); err == nil {
		t.Error("write_file wrote $GARUDA_HOME/policy.json")
	}
	if !strings.Contains(fileText(filepath.Join(real, "ghome", "credentials")), "sk-ant-homelink") {
		t.Fatal("control: a plain open does not read the key")
	}
}

// FOUND AND FIXED. A team deny rule on an absolute path is bypassed by opening the root through a symlink: the
// paths of the session are spelled under the link, and the rule names the real folder. Controls: the same read
// with the root by its real name is denied, and without the rule the file is read.
func TestRedTeamSymlinkedRootSkipsTeamDenyRule(t *testing.T) {
	base := t.TempDir()
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	mustWrite(t, filepath.Join(real, "secret", "key.pem"), "team-secret-0004\n")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := newEnvAt(t, link, filepath.Join(t.TempDir(), "home"))
	c := e.client()
	probe := func(root string) *execv1.Result {
		r, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		res, _, _ := run(t, start(t, c, ctx(t), r.SessionId, read("secret/key.pem")), execv1.Choice_CHOICE_ONCE)
		return res
	}
	if res := probe(link); !leaked(res, "team-secret") {
		t.Fatalf("control: without the rule the file is not read: %v", res)
	}
	mustWrite(t, filepath.Join(e.home, "policy.json"), fmt.Sprintf(`{"permissions":{"deny":["read_file(/%s/secret/**)"]}}`, real))
	if res := probe(real); leaked(res, "team-secret") {
		t.Fatalf("control: the team rule does not deny the real path: %v", res)
	}
	if res := probe(link); leaked(res, "team-secret") {
		t.Errorf("the team deny rule is bypassed through a symlinked root: %v", res)
	}
	// The other way round: a root-relative rule, the root by the link's name, the file by its real name (outside
	// the root as spelled, so a question the front end allows).
	mustWrite(t, filepath.Join(real, "private", "id"), "user-secret-0008\n")
	mustWrite(t, filepath.Join(e.home, "settings.json"), `{"permissions":{"deny":["read_file(./private/**)"]}}`)
	r, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: link})
	if err != nil {
		t.Fatal(err)
	}
	if res, _, _ := run(t, start(t, c, ctx(t), r.SessionId, read("private/id")), execv1.Choice_CHOICE_ONCE); leaked(res, "user-secret") {
		t.Fatalf("control: the root-relative rule does not deny: %v", res)
	}
	if res, _, _ := run(t, start(t, c, ctx(t), r.SessionId, read(filepath.Join(real, "private", "id"))), execv1.Choice_CHOICE_ONCE); leaked(res, "user-secret") {
		t.Errorf("the root-relative deny rule is bypassed by the real name of a symlinked root: %v", res)
	}
}

// FOUND AND FIXED (denial of service). Brace alternatives of a glob pattern were expanded without a bound: a
// 100-byte pattern of twenty {a,b} is a million patterns (1 GB allocated, then a million matches per file), and
// 26 of them exhaust the broker's memory. Also grep's glob filter. Control: a pattern with a few alternatives works.
func TestRedTeamGlobBraceExplosion(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.root, "ab.go"), "package x\n")
	mustWrite(t, filepath.Join(e.root, "sub", "b.txt"), "x\n")
	c := e.client()
	sid := e.open(c)
	bomb := strings.Repeat("{a,b}", 20)
	for _, op := range []*execv1.Start{
		globOp(bomb),
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "x", Glob: bomb}}},
	} {
		res, err := within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 3*time.Second)
		if err == nil && res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("a pattern of 2^20 alternatives was taken: %.200s", res.GetContent())
		}
	}
	res, _ := within(t, c, sid, globOp("{a,b}*.{go,txt}"), execv1.Choice_CHOICE_ONCE, 3*time.Second)
	if !strings.Contains(res.GetContent(), "ab.go") {
		t.Fatalf("control: %v", res)
	}
}

// FOUND AND FIXED (denial of service). "**" segments were matched by plain recursion: a pattern **/*/**/*/.../x
// against one path thirty folders deep takes seconds per file and grows exponentially with the pattern, in
// glob's pattern, grep's glob filter and in a hostile repository's .gitignore (every search of the project
// hangs). A cancel does not stop a match in progress. Control: the same tree is searched at once with a plain
// pattern.
func TestRedTeamStarStarBacktracking(t *testing.T) {
	e := newEnv(t)
	deep := filepath.Join(e.root, strings.Repeat("d/", 30))
	mustWrite(t, filepath.Join(deep, "f.txt"), "needle\n")
	bomb := strings.Repeat("**/*/", 12) + "nomatch"
	c := e.client()
	sid := e.open(c)
	for _, op := range []*execv1.Start{
		globOp(bomb),
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "needle", Glob: bomb}}},
	} {
		within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 5*time.Second)
	}
	// The same from a .gitignore the repository ships.
	mustWrite(t, filepath.Join(e.root, ".gitignore"), "/"+bomb+"\n")
	res, _ := within(t, c, sid, grepOp("needle", "files"), execv1.Choice_CHOICE_ONCE, 5*time.Second)
	if !strings.Contains(res.GetContent(), "f.txt") {
		t.Errorf("grep with the .gitignore: %v", res)
	}
	os.Remove(filepath.Join(e.root, ".gitignore"))
	res, _ = within(t, c, sid, globOp("**/f.txt"), execv1.Choice_CHOICE_ONCE, 5*time.Second)
	if !strings.Contains(res.GetContent(), "f.txt") {
		t.Fatalf("control: %v", res)
	}
}

// FOUND AND FIXED (denial of service). A grep pattern with no literal that can match a line break ([^z]+, \s,
// (?s).) was searched over the whole file from each match on: every matching line rescans the rest of the file,
// quadratic in the file's size (a 300 KB file takes minutes), and a cancel does not stop it. Also for an honest
// model. Control: a pattern with a literal on the same file is instant.
func TestRedTeamGrepQuadraticPattern(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.root, "many.txt"), strings.Repeat("ab\n", 100_000))
	c := e.client()
	sid := e.open(c)
	for _, p := range []string{`[^z]+`, `\s*[ab]`, `(?s)[ab].`} {
		res, err := within(t, c, sid, grepOp(p, "count"), execv1.Choice_CHOICE_ONCE, 5*time.Second)
		if err == nil && !strings.Contains(res.GetContent(), "many.txt:100000") {
			t.Errorf("grep %q: %v", p, res)
		}
	}
	res, _ := within(t, c, sid, grepOp("ab", "count"), execv1.Choice_CHOICE_ONCE, 5*time.Second)
	if !strings.Contains(res.GetContent(), "many.txt:100000") {
		t.Fatalf("control: %v", res)
	}
}

// FOUND AND FIXED (crash). edit_file prepares the new bytes before it asks, with no bound on their size:
// replace_all of a one-byte old_string in a 16 MiB file by a 3 MiB new_string asks bytes.ReplaceAll for 50 TB, and
// the Go runtime ends the broker ("out of memory", not a recoverable panic). The model can do it, no question
// needed. Control: a replace_all that stays under the limit is prepared and asked about.
func TestRedTeamEditReplaceAllExplodes(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.root, "big.txt"), strings.Repeat("a", 16<<20))
	mustWrite(t, filepath.Join(e.root, "small.txt"), "a a a\n")
	c := e.client()
	sid := e.open(c)
	res, qs, err := run(t, start(t, c, ctx(t), sid, editOp("big.txt", "a", strings.Repeat("b", 3<<20), true)), execv1.Choice_CHOICE_DENY)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_FAILED || len(qs) != 0 {
		t.Errorf("an edit of 50 TB: %v %v (%d questions)", res, err, len(qs))
	}
	// Ambiguous without replace_all: refused before any question.
	if res, qs, _ := run(t, start(t, c, ctx(t), sid, editOp("small.txt", "a", "b", false)), execv1.Choice_CHOICE_ONCE); res.GetStatus() != execv1.Status_STATUS_FAILED || len(qs) != 0 {
		t.Errorf("an ambiguous edit: %v (%d questions)", res, len(qs))
	}
	res, qs, err = run(t, start(t, c, ctx(t), sid, editOp("small.txt", "a", "bb", true)), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 1 || fileText(filepath.Join(e.root, "small.txt")) != "bb bb bb\n" {
		t.Fatalf("control: %v %v (%d questions)", res, err, len(qs))
	}
}

// HELD. Path spellings of the file tools: NUL bytes, an over-long path or name, "~", /proc/self/root, /proc/self/cwd
// and /dev/fd links to $GARUDA_HOME (outside the root, allowed by the front end), a trailing slash on a file.
// Control: a plain open of the same /proc spelling reads the key.
func TestRedTeamPathSpellings(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.home, "credentials"), `{"anthropic":"sk-ant-spell-0005"}`)
	mustWrite(t, filepath.Join(e.root, "ok.txt"), "ok\n")
	c := e.client()
	sid := e.open(c)
	cred := filepath.Join(e.home, "credentials")
	fd, err := syscall.Open(e.home, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, p := range []string{
		"ok.txt\x00/../../" + cred, cred + "\x00", strings.Repeat("a/", 3000) + "x", strings.Repeat("n", 300),
		"~/../" + cred, "/proc/self/root" + cred, "/proc/self/cwd/../../../../../../../../.." + cred,
		fmt.Sprintf("/proc/%d/fd/%d/credentials", os.Getpid(), fd), fmt.Sprintf("/dev/fd/%d/credentials", fd),
		"/proc/thread-self/root" + cred, cred + "/",
	} {
		res, _, err := run(t, start(t, c, ctx(t), sid, read(p)), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if leaked(res, "sk-ant-spell") {
			t.Errorf("read_file %q read the key", p)
		}
		// Writes are allowed by the front end; the only place one may land is inside the root ("~/.." is root/).
		res, _, _ = run(t, start(t, c, ctx(t), sid, write(p, "pwned")), execv1.Choice_CHOICE_ONCE)
		if res.GetStatus() == execv1.Status_STATUS_COMPLETED && !strings.Contains(res.GetContent(), e.root+"/") {
			t.Errorf("write_file %q completed outside the root: %s", p, res.GetContent())
		}
	}
	if !strings.Contains(fileText(cred), "sk-ant-spell") {
		t.Error("the key was changed")
	}
	ents, _ := os.ReadDir(e.home)
	for _, ent := range ents {
		if n := ent.Name(); n != "credentials" && n != "audit" && n != "undo" {
			t.Errorf("a write reached $GARUDA_HOME: %s", n)
		}
	}
	if !strings.Contains(fileText(fmt.Sprintf("/proc/self/fd/%d/credentials", fd)), "sk-ant-spell") {
		t.Fatal("control: a plain open of the /proc spelling does not read the key")
	}
}

// HELD. Special files in the root: a FIFO with no writer, a unix socket, links to /dev/zero and /dev/stdin, a
// 5 GB sparse file; read_file, edit_file and grep answer at once and do not fill the broker's memory. Control: a
// regular file next to them is read and grepped.
func TestRedTeamSpecialFiles(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.root, "plain.txt"), "needle\n")
	if err := syscall.Mkfifo(filepath.Join(e.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(e.root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Symlink("/dev/zero", filepath.Join(e.root, "zero"))
	os.Symlink("/dev/stdin", filepath.Join(e.root, "stdin"))
	f, err := os.Create(filepath.Join(e.root, "sparse.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("needle at the start\n")
	f.Truncate(5 << 30)
	f.Close()
	c := e.client()
	sid := e.open(c)
	for _, p := range []string{"fifo", "sock", "zero", "stdin", "sparse.log"} {
		for _, op := range []*execv1.Start{read(p), editOp(p, "needle", "x", false), write(p, "x"),
			{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "needle", Path: p, OutputMode: "content"}}}} {
			res, _ := within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 5*time.Second)
			if res.GetStatus() == execv1.Status_STATUS_COMPLETED && op.GetGrep() == nil {
				t.Errorf("%v completed: %.100s", op, res.GetContent())
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(e.root, "sparse.log")); err != nil || fi.Size() != 5<<30 {
		t.Errorf("sparse.log changed: %v", err)
	}
	res, _ := within(t, c, sid, grepOp("needle", "files"), execv1.Choice_CHOICE_ONCE, 10*time.Second)
	if !strings.Contains(res.GetContent(), "plain.txt") {
		t.Fatalf("control: %v", res)
	}
}

// FOUND AND FIXED (hang). A front end that starts calls and never reads their streams leaves the broker blocked in
// gRPC's Send (flow control) with no way out: the call's cancel does not reach a blocked Send, so CloseSession
// (and the broker's Shutdown, which waits for every call) waited for ever, with the front end still connected.
// Control: a client that reads gets its result and CloseSession returns.
func TestRedTeamUnreadStreamsBlockClose(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.root, "big.txt"), strings.Repeat("needle "+strings.Repeat("x", 230)+"\n", 1000))
	// The front end picks its own flow-control window: a fixed 64 KiB (no BDP growth) is smaller than a result.
	cc, err := grpc.NewClient("unix://"+e.sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	c := execv1.NewExecServiceClient(cc)
	sid := e.open(c)
	op := &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "needle", OutputMode: "content"}}}
	if res, _ := within(t, c, sid, op, execv1.Choice_CHOICE_ONCE, 5*time.Second); len(res.GetContent()) < 200<<10 {
		t.Fatalf("control: the result is small: %d bytes", len(res.GetContent()))
	}
	start(t, c, ctx(t), sid, op)                                                                                      // never read
	start(t, c, ctx(t), sid, bash("for i in $(seq 1 200); do head -c 20000 /dev/zero | tr '\\0' x; sleep 0.1; done")) // progress, never read
	time.Sleep(3 * time.Second)
	cx, cancel := context.WithTimeout(ctx(t), 5*time.Second)
	defer cancel()
	if _, err := c.CloseSession(cx, &execv1.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Errorf("CloseSession with unread calls: %v", err)
	}
	// Control: another session of the same client still works.
	sid2 := e.open(c)
	if res, _ := within(t, c, sid2, op, execv1.Choice_CHOICE_ONCE, 5*time.Second); len(res.GetContent()) < 200<<10 {
		t.Fatalf("control: %v", res)
	}
	// The broker's shutdown with an unread command running.
	start(t, c, ctx(t), sid2, bash("for i in $(seq 1 200); do head -c 20000 /dev/zero | tr '\\0' x; sleep 0.1; done"))
	time.Sleep(3 * time.Second)
	done := make(chan struct{})
	go func() { e.svc.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("Shutdown waits for a call whose stream is not read")
	}
}

// openFDs counts the descriptors of this process (the broker runs in it).
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// FOUND AND FIXED (resource exhaustion). A client could open sessions without bound, and a session outlived its
// connection (only that connection may use it): on a serving broker each left its root and session file open
// until the broker stopped, so opening sessions and hanging up, again and again, ran the broker out of file
// descriptors for every user. Control: sessions open up to the bound, and again once the connection is gone.
func TestRedTeamSessionsExhaustTheBroker(t *testing.T) {
	dir := t.TempDir()
	root, home := filepath.Join(dir, "project"), filepath.Join(dir, "home")
	os.MkdirAll(root, 0o755)
	svc := broker.NewService(broker.Config{Home: home, ManagedPolicy: filepath.Join(dir, "managed.json"), Version: "test"})
	srv := broker.NewServer(svc, []uint32{uint32(os.Getuid())})
	sock := filepath.Join(dir, "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { svc.Shutdown(); srv.Stop() })
	dial := func() (*grpc.ClientConn, execv1.ExecServiceClient) {
		cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc, execv1.NewExecServiceClient(cc)
	}
	cc, c := dial()
	if _, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: root}); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	opened := 1
	for ; opened < 1100; opened++ {
		_, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: root})
		if status.Code(err) == codes.ResourceExhausted {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if opened >= 1100 {
		t.Errorf("%d sessions opened on one connection, holding %d descriptors", opened, openFDs(t)-before)
	}
	cc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for openFDs(t) > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := openFDs(t); n > before {
		t.Errorf("the sessions of a closed connection still hold %d descriptors", n-before)
	}
	_, c2 := dial()
	if _, err := c2.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: root}); err != nil {
		t.Fatalf("control: a new connection cannot open a session: %v", err)
	}
}

// FOUND AND FIXED. "An action that cannot be audited is not done", but Setup stored the key and Undo restored the
// file first and wrote their audit record after: with the audit log failing (its folder gone, a full disk) both
// acted unaudited, and only then reported the error. Control: with the log working both act and are recorded.
func TestRedTeamSetupAndUndoActBeforeTheirRecord(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	if res, _, err := run(t, start(t, c, ctx(t), sid, write("u.txt", "garuda\n")), execv1.Choice_CHOICE_ONCE); err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("write: %v %v", res, err)
	}
	if _, err := c.Setup(ctx(t), &execv1.SetupRequest{Provider: "anthropic", Model: "m1", ApiKey: "sk-ant-first", Force: true}); err != nil {
		t.Fatalf("control Setup: %v", err)
	}
	cred := filepath.Join(e.home, "credentials")
	if !strings.Contains(fileText(cred), "sk-ant-first") {
		t.Fatalf("control: Setup did not store the key: %s", fileText(cred))
	}
	if err := os.RemoveAll(filepath.Join(e.home, "audit")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Setup(ctx(t), &execv1.SetupRequest{Provider: "anthropic", Model: "m2", ApiKey: "sk-ant-second", Force: true}); err == nil {
		t.Error("Setup succeeded with the audit log gone")
	}
	if strings.Contains(fileText(cred), "sk-ant-second") {
		t.Error("Setup stored a key it could not audit")
	}
	if _, err := c.Undo(ctx(t), &execv1.UndoRequest{SessionId: sid}); err == nil {
		t.Error("Undo succeeded with the audit log gone")
	}
	if _, err := os.Stat(filepath.Join(e.root, "u.txt")); err != nil {
		t.Errorf("Undo removed u.txt without an audit record: %v", err)
	}
}

// HELD. Command and skill names with traversal reach no file outside the project's command folders: names are
// looked up in the list the broker made, never joined to a path; a symlinked command file is skipped. Control:
// the project's own command resolves (after its consent).
func TestRedTeamCommandAndSkillNames(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.root), "outside")
	mustWrite(t, filepath.Join(outside, "x.md"), "OUTSIDE-PROMPT\n")
	mustWrite(t, filepath.Join(outside, "s", "SKILL.md"), "---\nname: s\ndescription: d\n---\nOUTSIDE-SKILL\n")
	mustWrite(t, filepath.Join(e.home, "credentials"), `{"anthropic":"sk-ant-cmd-0006"}`)
	mustWrite(t, filepath.Join(e.root, ".garuda", "commands", "ok.md"), "OK-PROMPT\n")
	os.Symlink(filepath.Join(outside, "x.md"), filepath.Join(e.root, ".garuda", "commands", "link.md"))
	os.Symlink(filepath.Join(outside, "s"), filepath.Join(e.root, ".garuda", "skills", "s"))
	c := e.client()
	sid := e.open(c)
	resolve := func(text string) *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_ResolveCommand{ResolveCommand: &execv1.ResolveCommand{Text: text}}}
	}
	skill := func(name string) *execv1.Start {
		return &execv1.Start{Op: &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: name}}}
	}
	for _, op := range []*execv1.Start{
		resolve("/../../outside/x"), resolve("/../outside/x"), resolve("/a/../../x"), resolve("/link"), resolve("/..:..:outside:x"),
		resolve("/../credentials"), resolve("/" + outside + "/x"),
		skill("../../outside/s"), skill("../outside/s"), skill("s"), skill("/" + outside + "/s"), skill("../credentials"),
	} {
		res, _, err := run(t, start(t, c, ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if leaked(res, "OUTSIDE-") || leaked(res, "sk-ant-cmd") || strings.Contains(res.GetResolved().GetPrompt(), "OUTSIDE-") {
			t.Errorf("%v reached a file outside: %v", op, res)
		}
	}
	res, qs, _ := run(t, start(t, c, ctx(t), sid, resolve("/ok")), execv1.Choice_CHOICE_ONCE)
	if res.GetResolved().GetPrompt() != "OK-PROMPT\n" && !strings.Contains(res.GetResolved().GetPrompt(), "OK-PROMPT") || len(qs) != 1 {
		t.Fatalf("control: %v (%d questions)", res, len(qs))
	}
}

// HELD. Odd roots: relative, a file, missing, a NUL byte, empty. /proc opens (a folder the user owns parts of),
// but its magic links (self/root, self/cwd, self/fd/N, thread-self/root) lead the file tools nowhere and writes
// there fail. Control: a plain open of /proc/self/fd/N reads the key.
func TestRedTeamOddRoots(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.home, "credentials"), `{"anthropic":"sk-ant-proc-0007"}`)
	c := e.client()
	file := filepath.Join(e.root, "f.txt")
	mustWrite(t, file, "x")
	for _, root := range []string{"project", file, filepath.Join(e.root, "missing"), e.root + "\x00x", "", "./" + e.root} {
		if _, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: root}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("root %q: %v", root, err)
		}
	}
	fd, err := syscall.Open(e.home, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	r, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: "/proc"})
	if err != nil {
		t.Fatalf("/proc: %v", err)
	}
	for _, p := range []string{"self/root" + e.home + "/credentials", fmt.Sprintf("self/fd/%d/credentials", fd),
		fmt.Sprintf("%d/fd/%d/credentials", os.Getpid(), fd), "thread-self/root" + e.home + "/credentials"} {
		res, _, _ := run(t, start(t, c, ctx(t), r.SessionId, read(p)), execv1.Choice_CHOICE_ONCE)
		if leaked(res, "sk-ant-proc") {
			t.Errorf("read_file %s in /proc read the key", p)
		}
		res, _, _ = run(t, start(t, c, ctx(t), r.SessionId, write(p, "x")), execv1.Choice_CHOICE_ONCE)
		if res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("write_file %s in /proc completed: %s", p, res.GetContent())
		}
	}
	if res, _, _ := run(t, start(t, c, ctx(t), r.SessionId, write("self/comm", "pwned")), execv1.Choice_CHOICE_ONCE); res.GetStatus() == execv1.Status_STATUS_COMPLETED {
		t.Errorf("write_file self/comm completed: %s", res.GetContent())
	}
	if !strings.Contains(fileText(fmt.Sprintf("/proc/self/fd/%d/credentials", fd)), "sk-ant-proc") {
		t.Fatal("control: a plain open through /proc does not read the key")
	}
}

// HELD. What never asks holds whatever the front end answers: a team deny rule, plan mode (writes, edits,
// commands outside the sandbox). Each is denied without a question and changes nothing. Control: the same write in
// build mode, to a path no rule names, asks and is done.
func TestRedTeamAllowCannotLoosen(t *testing.T) {
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.home, "policy.json"), `{"permissions":{"deny":["write_file(**/*.sh)","Bash(touch *)"]}}`)
	mustWrite(t, filepath.Join(e.root, "e.txt"), "old\n")
	c := e.client()
	sid := e.open(c)
	unsandboxed := &execv1.Start{Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: "echo hi > unsb.txt", Unsandboxed: true}}}
	for _, op := range []*execv1.Start{write("run.sh", "x"), write("sub/../deploy.sh", "x"), bash("touch team.txt"), bash("true; touch team.txt")} {
		res, qs, _ := run(t, start(t, c, ctx(t), sid, op), execv1.Choice_CHOICE_SESSION)
		if res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 0 {
			t.Errorf("team deny %v: %v (%d questions)", op, res, len(qs))
		}
	}
	if _, err := c.SetMode(ctx(t), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_PLAN}); err != nil {
		t.Fatal(err)
	}
	for _, op := range []*execv1.Start{write("plan.txt", "x"), editOp("e.txt", "old", "new", false), unsandboxed} {
		res, qs, _ := run(t, start(t, c, ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if res.GetStatus() != execv1.Status_STATUS_DENIED || len(qs) != 0 {
			t.Errorf("plan mode %v: %v (%d questions)", op, res, len(qs))
		}
	}
	for _, f := range []string{"run.sh", "deploy.sh", "team.txt", "plan.txt", "unsb.txt"} {
		if _, err := os.Stat(filepath.Join(e.root, f)); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	if fileText(filepath.Join(e.root, "e.txt")) != "old\n" {
		t.Error("e.txt was edited in plan mode")
	}
	c.SetMode(ctx(t), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_BUILD})
	if res, qs, _ := run(t, start(t, c, ctx(t), sid, write("ok.txt", "x")), execv1.Choice_CHOICE_ONCE); res.GetStatus() != execv1.Status_STATUS_COMPLETED || len(qs) != 1 {
		t.Fatalf("control: %v (%d questions)", res, len(qs))
	}
}

// HELD. The folder of a previewed write swapped for a symlink (to outside, or to $GARUDA_HOME) between the question
// and the answer: the allowed write does not follow it, and a new folder planted as a symlink after the question
// is not followed either. Control: without the swap the write lands.
func TestRedTeamFolderSwappedBetweenQuestionAndAnswer(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.root), "outside")
	os.MkdirAll(outside, 0o755)
	os.MkdirAll(filepath.Join(e.root, "sub"), 0o755)
	c := e.client()
	sid := e.open(c)
	swap := func(p string, plant func()) *execv1.Result {
		st := start(t, c, ctx(t), sid, write(p, "pwned\n"))
		m, err := next(t, st)
		if err != nil || m.GetQuestion() == nil {
			t.Fatalf("want a question: %v %v", m, err)
		}
		plant()
		answer(st, m.GetQuestion().QuestionId, execv1.Choice_CHOICE_ONCE)
		m, err = next(t, st)
		if err != nil {
			t.Fatal(err)
		}
		return m.GetResult()
	}
	swap("sub/a.txt", func() {
		os.Rename(filepath.Join(e.root, "sub"), filepath.Join(e.root, "sub.real"))
		os.Symlink(outside, filepath.Join(e.root, "sub"))
	})
	swap("new/deep/policy.json", func() { os.Symlink(e.home, filepath.Join(e.root, "new")) })
	for _, p := range []string{filepath.Join(outside, "a.txt"), filepath.Join(e.home, "deep", "policy.json")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("an allowed write followed a folder swapped after its question to %s", p)
		}
	}
	if res := swap("sub.real/b.txt", func() {}); res.GetStatus() != execv1.Status_STATUS_COMPLETED || fileText(filepath.Join(e.root, "sub.real", "b.txt")) != "pwned\n" {
		t.Fatalf("control: %v", res)
	}
}

// HELD. Record writes only the session's own file in $GARUDA_HOME/sessions: hostile kinds and data, a symlink
// planted as the session file, another connection's session. Control: a good record is kept.
func TestRedTeamRecordStaysInSessions(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.root), "outside.jsonl")
	mustWrite(t, outside, "")
	c, other := e.client(), e.client()
	sid, planted := e.open(c), e.open(c)
	os.MkdirAll(filepath.Join(e.home, "sessions"), 0o700)
	os.Symlink(outside, filepath.Join(e.home, "sessions", planted+".jsonl"))
	for _, r := range []*execv1.RecordRequest{
		{SessionId: planted, Kind: "prompt", Data: []byte(`"into the link"`)},
		{SessionId: sid, Kind: strings.Repeat("a", 33), Data: []byte(`1`)},
		{SessionId: sid, Kind: "Prompt", Data: []byte(`1`)},
		{SessionId: sid, Kind: "prompt", Data: []byte("1\x00")},
		{SessionId: sid + "/../" + planted, Kind: "prompt", Data: []byte(`1`)},
	} {
		if _, err := c.Record(ctx(t), r); err == nil {
			t.Errorf("Record %q %q accepted", r.SessionId, r.Kind)
		}
	}
	if _, err := other.Record(ctx(t), &execv1.RecordRequest{SessionId: sid, Kind: "prompt", Data: []byte(`"foreign"`)}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another connection recorded into the session: %v", err)
	}
	if got := fileText(outside); got != "" {
		t.Errorf("a record was written through a planted symlink: %q", got)
	}
	if _, err := c.Record(ctx(t), &execv1.RecordRequest{SessionId: sid, Kind: "prompt", Data: []byte(`"hi"`)}); err != nil {
		t.Fatalf("control: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(e.home, "sessions"))
	for _, ent := range ents {
		if n := ent.Name(); n != sid+".jsonl" && n != sid+".meta.json" && n != planted+".jsonl" {
			t.Errorf("Record made %s", n)
		}
	}
	if !strings.Contains(fileText(filepath.Join(e.home, "sessions", sid+".jsonl")), `"hi"`) || strings.Contains(fileText(filepath.Join(e.home, "sessions", sid+".jsonl")), "foreign") {
		t.Fatalf("control: %s", fileText(filepath.Join(e.home, "sessions", sid+".jsonl")))
	}
}

// HELD. Setup, InspectTrust and PinTrust with crafted input write nothing but their own files: provider names with
// traversal, control characters in the key, a project settings file that is a symlink out of the folder (not read,
// not pinned), a file or a relative path as the folder. Control: a plain setup and pin work.
func TestRedTeamSetupAndTrustInputs(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	for _, r := range []*execv1.SetupRequest{
		{Provider: "../../x", Model: "m", ApiKey: "k"}, {Provider: "anthropic/../../x", Model: "m", ApiKey: "k"},
		{Provider: "anthropic", Model: "m", ApiKey: "sk-a\nb", Force: true}, {Provider: "anthropic", Model: "", ApiKey: "k"},
	} {
		if _, err := c.Setup(ctx(t), r); err == nil {
			t.Errorf("Setup %q %q %q accepted", r.Provider, r.Model, r.ApiKey)
		}
	}
	odd := &execv1.SetupRequest{Provider: "anthropic", Model: "../../../etc/passwd\n", ApiKey: "sk-ok", Force: true}
	if _, err := c.Setup(ctx(t), odd); err != nil {
		t.Fatalf("control Setup: %v", err)
	}
	ents, _ := os.ReadDir(e.home)
	for _, ent := range ents {
		switch ent.Name() {
		case "credentials", "models.json", "audit":
		default:
			t.Errorf("Setup made %s in $GARUDA_HOME", ent.Name())
		}
	}
	ents, _ = os.ReadDir(filepath.Dir(e.home))
	for _, ent := range ents {
		if n := ent.Name(); n != "home" && n != "project" && n != "b.sock" {
			t.Errorf("Setup wrote %s next to $GARUDA_HOME", n)
		}
	}
	outside := filepath.Join(t.TempDir(), "settings.json")
	mustWrite(t, outside, `{"permissions":{"allow":["Bash"]}}`)
	proj := filepath.Join(t.TempDir(), "p")
	os.MkdirAll(filepath.Join(proj, ".garuda"), 0o755)
	os.Symlink(outside, filepath.Join(proj, ".garuda", "settings.json"))
	in, err := c.InspectTrust(ctx(t), &execv1.InspectTrustRequest{Dir: proj})
	if err == nil && in.Exists {
		t.Errorf("InspectTrust read a settings file outside the folder: %v", in)
	}
	sum := policyHash(outside)
	if _, err := c.PinTrust(ctx(t), &execv1.PinTrustRequest{Dir: proj, Hash: sum}); err == nil {
		t.Error("PinTrust pinned a settings file outside the folder")
	}
	for _, d := range []string{"p", outside, proj + "/missing"} {
		if _, err := c.InspectTrust(ctx(t), &execv1.InspectTrustRequest{Dir: d}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("InspectTrust %q: %v", d, err)
		}
	}
	os.Remove(filepath.Join(proj, ".garuda", "settings.json"))
	mustWrite(t, filepath.Join(proj, ".garuda", "settings.json"), `{"permissions":{"allow":["Bash(ls)"]}}`)
	in, err = c.InspectTrust(ctx(t), &execv1.InspectTrustRequest{Dir: proj})
	if err != nil || !in.Exists {
		t.Fatalf("control inspect: %v %v", in, err)
	}
	if _, err := c.PinTrust(ctx(t), &execv1.PinTrustRequest{Dir: proj, Hash: in.Hash}); err != nil {
		t.Fatalf("control pin: %v", err)
	}
}

// policyHash is the trust hash of a file's bytes.
func policyHash(p string) string {
	data, _ := os.ReadFile(p)
	return policy.TrustHash(data)
}

// HELD. Messages in the wrong order and VerifyAudit spellings: an Answer as the first message, a Start for an
// unknown session, verify of the audit folder itself or a missing file in it. Control: verify of the real log.
func TestRedTeamWrongOrderAndVerifySpellings(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	sid := e.open(c)
	st, err := c.Call(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Answer{Answer: &execv1.Answer{QuestionId: "x", Choice: execv1.Choice_CHOICE_ONCE}}})
	if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("an answer first: %v", err)
	}
	if _, err := next(t, start(t, c, ctx(t), "no-such-session", write("x.txt", "x"))); status.Code(err) != codes.NotFound {
		t.Errorf("unknown session: %v", err)
	}
	run(t, start(t, c, ctx(t), sid, read("nothing.txt")), execv1.Choice_CHOICE_DENY) // a record in the log
	dir := filepath.Join(e.home, "audit")
	for _, f := range []string{dir, dir + "/", dir + "/.", dir + "/.."} {
		if _, err := c.VerifyAudit(ctx(t), &execv1.VerifyAuditRequest{File: f}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("VerifyAudit %q: %v", f, err)
		}
	}
	for _, f := range []string{dir + "/../audit/missing.jsonl", dir + "/x\x00.jsonl"} {
		if r, err := c.VerifyAudit(ctx(t), &execv1.VerifyAuditRequest{File: f}); err != nil || len(r.Files) != 1 || r.Files[0].Ok {
			t.Errorf("VerifyAudit of a missing file %q: %v %v", f, r, err)
		}
	}
	if r, err := c.VerifyAudit(ctx(t), &execv1.VerifyAuditRequest{}); err != nil || len(r.Files) == 0 || !r.Files[0].Ok {
		t.Fatalf("control: %v %v", r, err)
	}
	for _, f := range []string{"x.txt", "nothing.txt"} {
		if _, err := os.Stat(filepath.Join(e.root, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}

// FOUND AND FIXED (shared broker). A broker serving several uids opens only folders the calling uid owns, but
// checked the owner with a stat of the path and then opened the path again: a client that flips a symlink of its
// own between its folder and another user's gets a session in the other user's folder, which it then reads (and
// writes, and runs commands in) with the broker's rights. The client runs as uid 65534 (this test binary again).
// Control: the same client's own folder opens, and the other user's folder named directly is refused.
func TestRedTeamSharedBrokerRootSwap(t *testing.T) {
	if sock := os.Getenv("GARUDA_REDTEAM_SOCK"); sock != "" {
		swapClient(t, sock, os.Getenv("GARUDA_REDTEAM_LINK"))
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	base, err := os.MkdirTemp("", "garuda-swap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	mine, theirs := filepath.Join(base, "mine"), filepath.Join(base, "theirs")
	mustWrite(t, filepath.Join(mine, "marker.txt"), "mine\n")
	mustWrite(t, filepath.Join(theirs, "marker.txt"), "root-secret-0009\n")
	os.Chown(mine, 65534, 65534)
	bin := filepath.Join(base, "attacks.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	svc := broker.NewService(broker.Config{Home: filepath.Join(base, "home"), ManagedPolicy: filepath.Join(base, "managed.json"), Version: "test"})
	srv := broker.NewServer(svc, []uint32{0, 65534})
	sock := filepath.Join(base, "b.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o777)
	go srv.Serve(ln)
	t.Cleanup(func() { svc.Shutdown(); srv.Stop() })
	// The client's link, flipped between its own folder and root's for as long as the client runs.
	link := filepath.Join(base, "link")
	os.Symlink(mine, link)
	stop := make(chan struct{})
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		tmp := link + ".new"
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			to := mine
			if i%2 == 1 {
				to = theirs
			}
			os.Remove(tmp)
			os.Symlink(to, tmp)
			os.Rename(tmp, link)
		}
	}()
	cmd := exec.Command(bin, "-test.run=^TestRedTeamSharedBrokerRootSwap$", "-test.v")
	cmd.Env = append(os.Environ(), "GARUDA_REDTEAM_SOCK="+sock, "GARUDA_REDTEAM_LINK="+link)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	close(stop)
	<-flipped
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "root-secret") {
		t.Errorf("uid 65534 got a session in root's folder:\n%s", lastLines(string(out), 5))
	}
	if !strings.Contains(string(out), "control ok") {
		t.Fatalf("control: %s", out)
	}
}

// swapClient is the uid 65534 side of TestRedTeamSharedBrokerRootSwap.
func swapClient(t *testing.T, sock, link string) {
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := execv1.NewExecServiceClient(cc)
	theirs := filepath.Join(filepath.Dir(link), "theirs")
	if _, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: theirs}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("control: root's folder named directly: %v", err)
	}
	opened := 0
	for i := 0; i < 3000; i++ {
		r, err := c.OpenSession(ctx(t), &execv1.OpenSessionRequest{Root: link})
		if err != nil {
			continue
		}
		opened++
		res, _, _ := run(t, start(t, c, ctx(t), r.SessionId, read("marker.txt")), execv1.Choice_CHOICE_DENY)
		c.CloseSession(ctx(t), &execv1.CloseSessionRequest{SessionId: r.SessionId})
		if strings.Contains(res.GetContent(), "root-secret") {
			fmt.Printf("attempt %d: %s\n", i, res.GetContent())
			break
		}
	}
	if opened > 0 {
		fmt.Println("control ok:", opened, "sessions in its own folder")
	}
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(ls[max(len(ls)-n, 0):], "\n")
}
