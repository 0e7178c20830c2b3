package attacks

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (first pass over the boundary).
// FOUND AND FIXED. Protected paths are "protected at any depth" (policy.Protected, the one list for the file tools and
// commands) and "read-only for commands", but the sandbox covers them only at the root and at nested repositories
// that have a .git folder. A command rewrites an existing .vscode/ or .envrc of a plain sub-folder (a monorepo
// package), a submodule's hooks under .git/modules, or a worktree's commondir, silently.
func TestRedTeamProtectedPathsBelowTheRootAreWritableByCommands(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Root, ".git", "config"), "[core]\n")
	targets := []string{
		"packages/web/.vscode/tasks.json",
		"packages/web/.envrc",
		"packages/web/.garuda/settings.json",
		".git/modules/sm/hooks/pre-commit",
		".git/modules/sm/config",
		".git/worktrees/wt/commondir",
		"sm/.git",
	}
	for _, rel := range targets {
		if !policy.Protected(rel) {
			t.Fatalf("precondition: %s is not on the protected list", rel)
		}
		brokertest.MustWrite(t, filepath.Join(e.Root, rel), "original\n")
	}
	// Negative control for the protection: the same kind of file at the root is read-only for commands.
	brokertest.MustWrite(t, filepath.Join(e.Root, ".vscode", "tasks.json"), "original\n")
	c := e.Client()
	sid := e.Open(c)
	var cmd strings.Builder
	for _, rel := range append(targets, ".vscode/tasks.json", "packages/web/plain.txt") {
		fmt.Fprintf(&cmd, "echo pwned >> %s 2>/dev/null; ", rel)
	}
	cmd.WriteString("true")
	res := brokertest.Sh(t, c, sid, cmd.String())
	// Control: the command ran and wrote where it may.
	if got := brokertest.FileText(filepath.Join(e.Root, "packages/web/plain.txt")); got != "pwned\n" {
		t.Fatalf("control: the command did not run: %q\n%s", got, res.GetContent())
	}
	if got := brokertest.FileText(filepath.Join(e.Root, ".vscode/tasks.json")); got != "original\n" {
		t.Fatalf("control: the root's .vscode/tasks.json was written: %q", got)
	}
	for _, rel := range targets {
		if got := brokertest.FileText(filepath.Join(e.Root, rel)); got != "original\n" {
			t.Errorf("a sandboxed command rewrote the protected %s: %q (notices: %v)", rel, got, res.GetNotices())
		}
	}
}

// Found by red team (first pass over the boundary).
// FOUND AND FIXED. The read-only mount of .git/config covers its path, not its inode: a hard link made by an earlier command
// (here while creating the repository, which the compare names as "created") writes .git/config later though a
// direct write is refused. The compare after the write names it; the write is not stopped.
func TestRedTeamHardLinkWritesReadOnlyGitConfig(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	brokertest.Sh(t, c, sid, "git init -q && ln .git/config cfg")
	cfg := filepath.Join(e.Root, ".git", "config")
	before := brokertest.FileText(cfg)
	// Negative control: a direct write of .git/config is refused (the mount works on its path).
	if res := brokertest.Sh(t, c, sid,
		"printf '[core]\\n\\thooksPath = /tmp/evil\\n' >> .git/config"); res.GetStatus() == execv1.Status_STATUS_COMPLETED {
		t.Fatalf("control: .git/config written directly: %v", res)
	}
	if brokertest.FileText(cfg) != before {
		t.Fatal("control: .git/config changed by a direct write")
	}
	res := brokertest.Sh(t, c, sid, "printf '[core]\\n\\thooksPath = /tmp/evil\\n' >> cfg")
	if got := brokertest.FileText(cfg); got != before {
		t.Errorf("a command wrote .git/config through a hard link (status %v, notices %v):\n%s", res.GetStatus(), res.GetNotices(), got)
	}
}

// Found by red team (first pass over the boundary).
// FOUND AND FIXED (broker run as root). A sandboxed command keeps uid 0 without capabilities, and the owner of a file may
// set its setuid bit without any: the command leaves a setuid-root executable in the project. no_new_privs makes
// it useless inside the sandbox, but outside any local user who can reach the folder runs it as root.
func TestRedTeamSetuidBinaryLeftInRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only a root broker's commands own files as root")
	}
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	res := brokertest.Sh(t, c, sid, "cp /usr/bin/id ./sid && chmod 6755 ./sid; stat -c %A ./sid")
	bin := filepath.Join(e.Root, "sid")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatalf("the command did not run: %v %v", err, res)
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) == 0 {
		return
	}
	// Show what it gives: "nobody" runs it outside the sandbox (the folders opened so that nobody can reach it).
	for d := e.Root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	out, _ := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-u").CombinedOutput()
	t.Errorf("a sandboxed command left a set-id executable in the root: %v %s; run by nobody outside, it reports euid %q",
		fi.Mode(), bin, strings.TrimSpace(string(out)))
}

// Found by red team (first pass over the boundary).
// HELD. The host's IPv6 loopback is out of reach of a sandboxed command. Control: outside the sandbox (asked and
// allowed once) the same command connects.
func TestRedTeamHostIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("host-ipv6-service\n"))
			conn.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	cmd := fmt.Sprintf("exec 3<>/dev/tcp/::1/%d && head -1 <&3", port)
	if res := brokertest.Sh(t, c, sid, cmd); strings.Contains(res.GetContent(), "host-ipv6-service") {
		t.Fatalf("a sandboxed command reached the host's [::1]:%d: %s", port, res.GetContent())
	}
	op := &execv1.Start{Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: cmd, Unsandboxed: true}}}
	res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
	if !strings.Contains(res.GetContent(), "host-ipv6-service") {
		t.Fatalf("control: unsandboxed the command did not connect: %v", res)
	}
}

// Found by red team (first pass over the boundary).
// HELD. With Garuda's home inside the project (the project is the user's home folder), commands neither read nor
// write nor move it, and the file tools neither read, list nor grep it. Control: a plain open reads the key.
func TestRedTeamGarudaHomeInsideTheRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "project")
	home := filepath.Join(root, "ghome")
	e := brokertest.NewAt(t, root, home)
	creds := filepath.Join(home, "credentials")
	brokertest.MustWrite(t, creds, `{"anthropic":"sk-ant-secret-0001"}`)
	os.Chmod(creds, 0o600)
	brokertest.MustWrite(t, filepath.Join(root, "main.go"), "package main\n")
	c := e.Client()
	sid := e.Open(c)
	res := brokertest.Sh(t, c, sid, "cat ghome/credentials; ls -la ghome; echo x > ghome/credentials; mv ghome gh2; "+
		"ln ghome/credentials l 2>&1; cat l gh2/credentials; true")

	if strings.Contains(res.GetContent(), "sk-ant-secret") {
		t.Errorf("a command read Garuda's credentials: %s", res.GetContent())
	}
	if got := brokertest.FileText(creds); !strings.Contains(got, "sk-ant-secret") {
		t.Errorf("a command changed or moved Garuda's home: %q", got)
	}
	for _, op := range []*execv1.Start{
		brokertest.Read("ghome/credentials"),
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "sk-ant", OutputMode: "content"}}},
		{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: "**/cred*"}}},
		brokertest.Write("ghome/credentials", "{}"),
		brokertest.Write("ghome/policy.json", "{}"),
	} {
		r, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if strings.Contains(r.GetContent(), "sk-ant-secret") ||
			strings.Contains(r.GetContent(), "credentials") && r.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("%v reached Garuda's home: %v", op, r)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "policy.json")); err == nil {
		t.Error("a file tool wrote into Garuda's home")
	}
	if !strings.Contains(brokertest.FileText(creds), "sk-ant-secret") {
		t.Fatal("control: the key is not readable by a plain open")
	}
}

// Found by red team (first pass over the boundary).
// HELD. Inside its pid namespace a command cannot read the environment, cwd or descriptors of the sandbox's own
// init stage (pid 1), which holds capabilities the command has dropped. Control: its own /proc entries it reads.
func TestRedTeamProcOfTheSandboxInit(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-probe-environ-42")
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	res := brokertest.Sh(t, c, sid, "tr '\\0' '\\n' < /proc/1/environ; ls -l /proc/1/cwd/ /proc/1/fd/ /proc/1/root/; cat /proc/1/fd/4; "+
		"echo self=$(tr '\\0' ' ' < /proc/self/cmdline); grep CapEff /proc/1/status; true")

	out := res.GetContent()
	if strings.Contains(out, "sk-probe-environ-42") {
		t.Fatalf("a command read a provider key from /proc: %s", out)
	}
	for _, leak := range []string{"spec", "status", "pipe:"} {
		if strings.Contains(out, leak) {
			t.Errorf("a command saw the init stage's descriptors (%s): %s", leak, out)
		}
	}
	if !strings.Contains(out, "/proc/1/environ: Permission denied") {
		t.Errorf("reading pid 1's environ was not refused: %s", out)
	}
	// Control: pid 1 is there, with capabilities the command lacks, and the command reads its own /proc.
	if !strings.Contains(out, "self=tr") || !strings.Contains(out, "CapEff:") {
		t.Fatalf("control: the command could not read its own /proc: %s", out)
	}
}

// Found by red team (first pass over the boundary).
// HELD. A symlink a command plants (to a file or folder outside, dangling or not) does not carry the next
// file-tool write out of the root, even when the user allows it. Control: a plain open through the link escapes.
func TestRedTeamCommandPlantedSymlinkAndNextWrite(t *testing.T) {
	e := brokertest.New(t)
	outside := filepath.Join(filepath.Dir(e.Root), "outside")
	brokertest.MustWrite(t, filepath.Join(outside, "victim.txt"), "original\n")
	c := e.Client()
	sid := e.Open(c)
	res := brokertest.Sh(t, c, sid, "ln -s ../outside/victim.txt f.txt && ln -s ../outside/new.txt dangling.txt && "+
		"ln -s ../outside d && mkdir -p real && ln -s ../../outside real/up")

	if res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		t.Fatalf("plant: %v", res)
	}
	for _, p := range []string{"f.txt", "dangling.txt", "d/victim.txt", "d/new2.txt", "real/up/victim.txt"} {
		brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write(p, "pwned\n")), execv1.Choice_CHOICE_ONCE)
		edit := &execv1.Start{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: p, OldString: "original", NewString: "pwned"}}}
		brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, edit), execv1.Choice_CHOICE_ONCE)
	}
	if got := brokertest.FileText(filepath.Join(outside, "victim.txt")); got != "original\n" {
		t.Errorf("a write left the root through a planted symlink: %q", got)
	}
	for _, n := range []string{"new.txt", "new2.txt"} {
		if _, err := os.Stat(filepath.Join(outside, n)); err == nil {
			t.Errorf("a write created %s outside the root", n)
		}
	}
	if got := brokertest.FileText(filepath.Join(e.Root, "f.txt")); got != "original\n" {
		t.Fatalf("control: a plain open through the link does not reach the outside file: %q", got)
	}
}

// Found by red team (first pass over the boundary).
// FOUND AND FIXED. The audit log is out of a command's sight in its default place ($GARUDA_HOME, hidden), but not when team
// policy moves it with audit_dir: then every sandboxed command reads the log of every session of the broker (paths
// and the full text of earlier commands, which may carry tokens). Control: in the default place it is hidden.
func TestRedTeamAuditDirReadableByCommands(t *testing.T) {
	for _, moved := range []bool{false, true} {
		e := brokertest.New(t)
		dir := filepath.Join(e.Home, "audit")
		if moved {
			dir = filepath.Join(t.TempDir(), "garuda-audit")
			os.MkdirAll(dir, 0o700)
			brokertest.MustWrite(t, filepath.Join(e.Home, "policy.json"), fmt.Sprintf(`{"audit_dir": %q}`, dir))
		}
		c := e.Client()
		other := e.Open(c)
		brokertest.Sh(t, c, other, "true curl -H 'Authorization: Bearer tok-in-another-session-77'")
		if files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl")); len(files) == 0 {
			t.Fatalf("precondition: no audit log in %s", dir)
		}
		sid := e.Open(c)
		res := brokertest.Sh(t, c, sid, fmt.Sprintf("cat %s/*.jsonl 2>&1; true", dir))
		if strings.Contains(res.GetContent(), "tok-in-another-session-77") {
			t.Errorf("audit_dir moved=%v: a command read the audit log in %s:\n%.300s", moved, dir, res.GetContent())
		} else if moved {
			t.Logf("held: %s", res.GetContent())
		}
	}
}

// Found by red team (class 1 pass).
// FOUND AND FIXED. The audit folder team policy names was hidden from commands but not from the file tools: a read
// or a write there is outside the project and only asks, so a front end that answers "allow" read every session's
// commands, or rewrote the log. Now it is out of reach like $GARUDA_HOME. Control: a file beside it is read.
func TestRedTeamAuditDirReachableByFileTools(t *testing.T) {
	e := brokertest.New(t)
	base := t.TempDir()
	dir := filepath.Join(base, "garuda-audit")
	os.MkdirAll(dir, 0o700)
	brokertest.MustWrite(t, filepath.Join(e.Home, "policy.json"), fmt.Sprintf(`{"audit_dir": %q}`, dir))
	brokertest.MustWrite(t, filepath.Join(base, "beside.txt"), "beside-0042\n")
	c := e.Client()
	sid := e.Open(c)
	brokertest.Sh(t, c, sid, "true curl -H 'Authorization: Bearer tok-in-the-log-88'")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("precondition: no audit log in %s", dir)
	}
	for _, op := range []*execv1.Start{brokertest.Read(files[0]), brokertest.Write(files[0], "{}\n"),
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "tok-in-the-log", Path: base, OutputMode: "content"}}}} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED || strings.Contains(res.GetContent(), "tok-in-the-log") {
			t.Errorf("%v: %v %v", op, res, err)
		}
	}
	if !strings.Contains(brokertest.FileText(files[0]), "tok-in-the-log-88") {
		t.Error("the audit log was rewritten")
	}
	res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read(filepath.Join(base, "beside.txt"))),
		execv1.Choice_CHOICE_ONCE)
	if !strings.Contains(res.GetContent(), "beside-0042") {
		t.Fatalf("control: a file beside the audit folder is not read: %v", res)
	}
}

// Found by red team (first pass over the boundary).
// HELD. read_file reads the session's own saved output without a question, but not another session's, nor Garuda's
// home through a path that starts in the output folder. Control: its own output is read.
func TestRedTeamSavedOutputOfAnotherSession(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Home, "credentials"), `{"anthropic":"sk-out-secret"}`)
	owner, other := e.Client(), e.Client()
	sa, sb := e.Open(owner), e.Open(other)
	res := brokertest.Sh(t, owner, sa, "echo OUTPUT-OF-A-$((6*7)); seq 1 20000")
	i := strings.Index(res.Content, e.Home)
	if i < 0 {
		t.Fatalf("no saved output named: %.200s", res.Content)
	}
	path := res.Content[i:]
	path = path[:strings.IndexAny(path, " \n]")]
	for _, p := range []string{path, filepath.Dir(path) + "/../../credentials", filepath.Dir(path) + "/../" + sa + "/" + filepath.Base(path)} {
		r, qs, _ := brokertest.Run(t, brokertest.Start(t, other, brokertest.Ctx(t), sb, brokertest.Read(p)), execv1.Choice_CHOICE_ONCE)
		if strings.Contains(r.GetContent(), "OUTPUT-OF-A-42") || strings.Contains(r.GetContent(), "sk-out-secret") {
			t.Errorf("session B read %s (%d questions): %.200s", p, len(qs), r.GetContent())
		}
	}
	r, qs, _ := brokertest.Run(t, brokertest.Start(t, owner, brokertest.Ctx(t), sa, brokertest.Read(path)), execv1.Choice_CHOICE_DENY)
	if !strings.Contains(r.GetContent(), "OUTPUT-OF-A-42") || len(qs) != 0 {
		t.Fatalf("control: %v (%d questions)", r, len(qs))
	}
}

// Found by red team (first pass over the boundary).
// FOUND AND FIXED (it failed closed, but every command failed). When the root's .git is a file, as in a linked worktree (`git
// worktree add`) or a submodule checkout, the sandbox tries to bind ROOT/.git/config, gets ENOTDIR (not
// ErrNotExist, which protectPaths skips) and refuses every command with "sandbox unavailable ... run garuda-exec
// doctor". A command can do the same to a project (`printf 'gitdir: x' > .git` where there was no .git): every
// later command of the project fails. Control: the main worktree runs the same command.
func TestRedTeamWorktreeRootRunsCommands(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	base := t.TempDir()
	main, wt := filepath.Join(base, "main"), filepath.Join(base, "wt")
	for _, args := range [][]string{
		{"init", "-q", main},
		{"-C", main, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x"},
		{"-C", main, "worktree", "add", "-q", wt},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if fi, err := os.Lstat(filepath.Join(wt, ".git")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("precondition: the worktree's .git is not a file: %v", err)
	}
	for _, root := range []string{main, wt} {
		e := brokertest.NewAt(t, root, filepath.Join(t.TempDir(), "home"))
		c := e.Client()
		sid := e.Open(c)
		res := brokertest.Sh(t, c, sid, "git status --short >/dev/null && echo ran-$((40+2))")
		if !strings.Contains(res.GetContent(), "ran-42") {
			t.Errorf("root %s (.git is a %s): a plain command does not run: %s",
				root, map[bool]string{true: "folder", false: "file"}[root == main], res.GetContent())
		}
	}
}
