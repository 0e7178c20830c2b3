package attacks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED. OpenSession refused "/" and $GARUDA_HOME only as spelled: a symlink to "/" (or to Garuda's home)
// opened as a root, and every path below it is "inside the root", so reads of $GARUDA_HOME/credentials were allowed
// without a question (the $GARUDA_HOME rule compares paths, and the symlink's spelling is not $GARUDA_HOME's).
// Control: the broker refuses "/" itself, and a plain open through the link reads the key.
func TestRedTeamSymlinkToSlashOrHomeAsRoot(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Home, "credentials"), `{"anthropic":"sk-ant-slash-0001"}`)
	base := t.TempDir()
	slash, home, audit := filepath.Join(base, "slash"), filepath.Join(base, "home"), filepath.Join(base, "audit")
	os.MkdirAll(filepath.Join(e.Home, "audit"), 0o700)
	for link, to := range map[string]string{slash: "/", home: e.Home, audit: filepath.Join(e.Home, "audit")} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	c := e.Client()
	for _, root := range []string{slash, home, audit, slash + "/.", home + "/"} {
		r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root})
		if status.Code(err) == codes.InvalidArgument {
			continue
		}
		t.Errorf("root %s (a symlink to / or $GARUDA_HOME) opened: %v", root, err)
		if err != nil {
			continue
		}
		cred := filepath.Join(r.Root, strings.TrimPrefix(e.Home, "/"), "credentials")
		if root != slash {
			cred = filepath.Join(r.Root, "credentials")
		}
		res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Read(cred)), execv1.Choice_CHOICE_ONCE)
		if leaked(res, "sk-ant-slash") {
			t.Errorf("and read_file %s read Garuda's key: %s", cred, res.GetContent())
		}
	}
	if _, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: "/"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("control: / itself opened: %v", err)
	}
	if !strings.Contains(brokertest.FileText(filepath.Join(slash, e.Home, "credentials")), "sk-ant-slash") {
		t.Fatal("control: a plain open through the link does not read the key")
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED. With the root spelled through a symlink (root = /x/link, link -> /x/real) and Garuda's home inside
// the real folder, every file tool saw $GARUDA_HOME under the link's spelling, which no rule named: read_file and
// grep read the key, glob listed it and write_file (allowed by the front end) wrote a team policy.json into
// $GARUDA_HOME. Control: the same root by its real name is held (TestRedTeamGarudaHomeInsideTheRoot), and a
// plain open through the link reads the key.
func TestRedTeamSymlinkedRootReachesGarudaHome(t *testing.T) {
	base := t.TempDir()
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	home := filepath.Join(real, "ghome")
	brokertest.MustWrite(t, filepath.Join(home, "credentials"), `{"anthropic":"sk-ant-linked-0002"}`)
	brokertest.MustWrite(t, filepath.Join(real, "main.go"), "package main\n")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := brokertest.NewAt(t, link, home)
	c := e.Client()
	r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: link})
	if err != nil {
		t.Fatal(err)
	}
	sid := r.SessionId
	for _, op := range []*execv1.Start{
		brokertest.Read("ghome/credentials"),
		brokertest.Read(filepath.Join(link, "ghome", "credentials")),
		{Op: &execv1.Start_AttachMention{AttachMention: &execv1.AttachMention{Path: "ghome/credentials"}}},
		brokertest.GrepOp("sk-ant", "content"),
		brokertest.GlobOp("**/cred*"),
		brokertest.Write("ghome/policy.json", `{"permissions":{"allow":["Bash"]}}`),
		brokertest.EditOp("ghome/credentials", "sk-ant", "sk-xxx", false),
	} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		if leaked(res, "sk-ant-linked") || leaked(res, "credentials") && res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("%v reached Garuda's home through the symlinked root: %.200s", op, res.GetContent())
		}
	}
	if res := brokertest.Sh(t, c, sid,
		"cat ghome/credentials; cat "+link+"/ghome/credentials; echo x > ghome/credentials; true"); leaked(res, "sk-ant-linked") {
		t.Errorf("a command read Garuda's key through the symlinked root: %s", res.GetContent())
	}
	if _, err := os.Stat(filepath.Join(home, "policy.json")); err == nil {
		t.Error("write_file wrote $GARUDA_HOME/policy.json through the symlinked root")
	}
	if !strings.Contains(brokertest.FileText(filepath.Join(home, "credentials")), "sk-ant-linked") {
		t.Error("the key was changed")
	}
	if !strings.Contains(brokertest.FileText(filepath.Join(link, "ghome", "credentials")), "sk-ant-linked") {
		t.Fatal("control: a plain open through the link does not read the key")
	}
	// Control: an ordinary file of the symlinked root is read without a question.
	if res, qs, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read("main.go")),
		execv1.Choice_CHOICE_DENY); !strings.Contains(res.GetContent(), "package main") || len(qs) != 0 {
		t.Fatalf("control: main.go: %v (%d questions)", res, len(qs))
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED. The same with $GARUDA_HOME configured through a symlink (GARUDA_HOME=/x/hl/ghome, hl -> /x/real)
// and the root given by its real name /x/real: the rule compared the real paths with the link's spelling.
// Control: a plain open reads the key.
func TestRedTeamGarudaHomeSpelledThroughASymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	brokertest.MustWrite(t, filepath.Join(real, "ghome", "credentials"), `{"anthropic":"sk-ant-homelink-0003"}`)
	if err := os.Symlink(real, filepath.Join(base, "hl")); err != nil {
		t.Fatal(err)
	}
	e := brokertest.NewAt(t, real, filepath.Join(base, "hl", "ghome"))
	c := e.Client()
	sid := e.Open(c)
	for _, op := range []*execv1.Start{brokertest.Read("ghome/credentials"), brokertest.GrepOp("sk-ant", "content"),
		brokertest.Write("ghome/policy.json", "{}")} {
		res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, op), execv1.Choice_CHOICE_ONCE)
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
	if !strings.Contains(brokertest.FileText(filepath.Join(real, "ghome", "credentials")), "sk-ant-homelink") {
		t.Fatal("control: a plain open does not read the key")
	}
}

// Found by red team (second pass, as a compromised front end).
// FOUND AND FIXED. A team deny rule on an absolute path is bypassed by opening the root through a symlink: the
// paths of the session are spelled under the link, and the rule names the real folder. Controls: the same read
// with the root by its real name is denied, and without the rule the file is read.
func TestRedTeamSymlinkedRootSkipsTeamDenyRule(t *testing.T) {
	base := t.TempDir()
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	brokertest.MustWrite(t, filepath.Join(real, "secret", "key.pem"), "team-secret-0004\n")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := brokertest.NewAt(t, link, filepath.Join(t.TempDir(), "home"))
	c := e.Client()
	probe := func(root string) *execv1.Result {
		r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Read("secret/key.pem")),
			execv1.Choice_CHOICE_ONCE)
		return res
	}
	if res := probe(link); !leaked(res, "team-secret") {
		t.Fatalf("control: without the rule the file is not read: %v", res)
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "policy.json"), fmt.Sprintf(`{"permissions":{"deny":["read_file(/%s/secret/**)"]}}`, real))
	if res := probe(real); leaked(res, "team-secret") {
		t.Fatalf("control: the team rule does not deny the real path: %v", res)
	}
	if res := probe(link); leaked(res, "team-secret") {
		t.Errorf("the team deny rule is bypassed through a symlinked root: %v", res)
	}
	// The other way round: a root-relative rule, the root by the link's name, the file by its real name (outside
	// the root as spelled, so a question the front end allows).
	brokertest.MustWrite(t, filepath.Join(real, "private", "id"), "user-secret-0008\n")
	brokertest.MustWrite(t, filepath.Join(e.Home, "settings.json"), `{"permissions":{"deny":["read_file(./private/**)"]}}`)
	r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: link})
	if err != nil {
		t.Fatal(err)
	}
	if res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Read("private/id")),
		execv1.Choice_CHOICE_ONCE); leaked(res, "user-secret") {
		t.Fatalf("control: the root-relative rule does not deny: %v", res)
	}
	if res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId,
		brokertest.Read(filepath.Join(real, "private", "id"))), execv1.Choice_CHOICE_ONCE); leaked(res, "user-secret") {
		t.Errorf("the root-relative deny rule is bypassed by the real name of a symlinked root: %v", res)
	}
}

// Found by red team (second pass, as a compromised front end).
// HELD. Odd roots: relative, a file, missing, a NUL byte, empty. /proc opens (a folder the user owns parts of),
// but its magic links (self/root, self/cwd, self/fd/N, thread-self/root) lead the file tools nowhere and writes
// there fail. Control: a plain open of /proc/self/fd/N reads the key.
func TestRedTeamOddRoots(t *testing.T) {
	e := brokertest.New(t)
	brokertest.MustWrite(t, filepath.Join(e.Home, "credentials"), `{"anthropic":"sk-ant-proc-0007"}`)
	c := e.Client()
	file := filepath.Join(e.Root, "f.txt")
	brokertest.MustWrite(t, file, "x")
	for _, root := range []string{"project", file, filepath.Join(e.Root, "missing"), e.Root + "\x00x", "", "./" + e.Root} {
		if _, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("root %q: %v", root, err)
		}
	}
	fd, err := syscall.Open(e.Home, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: "/proc"})
	if err != nil {
		t.Fatalf("/proc: %v", err)
	}
	for _, p := range []string{"self/root" + e.Home + "/credentials", fmt.Sprintf("self/fd/%d/credentials", fd),
		fmt.Sprintf("%d/fd/%d/credentials", os.Getpid(), fd), "thread-self/root" + e.Home + "/credentials"} {
		res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Read(p)), execv1.Choice_CHOICE_ONCE)
		if leaked(res, "sk-ant-proc") {
			t.Errorf("read_file %s in /proc read the key", p)
		}
		res, _, _ = brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Write(p, "x")), execv1.Choice_CHOICE_ONCE)
		if res.GetStatus() == execv1.Status_STATUS_COMPLETED {
			t.Errorf("write_file %s in /proc completed: %s", p, res.GetContent())
		}
	}
	if res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Write("self/comm", "pwned")),
		execv1.Choice_CHOICE_ONCE); res.GetStatus() == execv1.Status_STATUS_COMPLETED {
		t.Errorf("write_file self/comm completed: %s", res.GetContent())
	}
	if !strings.Contains(brokertest.FileText(fmt.Sprintf("/proc/self/fd/%d/credentials", fd)), "sk-ant-proc") {
		t.Fatal("control: a plain open through /proc does not read the key")
	}
}

// Found by red team (second pass, as a compromised front end).
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
	brokertest.MustWrite(t, filepath.Join(mine, "marker.txt"), "mine\n")
	brokertest.MustWrite(t, filepath.Join(theirs, "marker.txt"), "root-secret-0009\n")
	os.Chown(mine, 65534, 65534)
	bin := filepath.Join(base, "attacks.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := brokertest.NewIn(t, base, filepath.Join(base, "project"), filepath.Join(base, "home"), 0, 65534).Sock
	os.Chmod(sock, 0o777)
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
	_, c := brokertest.Dial(t, sock)
	theirs := filepath.Join(filepath.Dir(link), "theirs")
	if _, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: theirs}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("control: root's folder named directly: %v", err)
	}
	opened := 0
	for i := 0; i < 3000; i++ {
		r, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: link})
		if err != nil {
			continue
		}
		opened++
		res, _, _ := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), r.SessionId, brokertest.Read("marker.txt")),
			execv1.Choice_CHOICE_DENY)
		c.CloseSession(brokertest.Ctx(t), &execv1.CloseSessionRequest{SessionId: r.SessionId})
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

// A front end cannot make the whole filesystem, or Garuda's own home, its project.
func TestRootThatIsNoProject(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	for _, root := range []string{"/", e.Home, filepath.Join(e.Home, "audit")} {
		os.MkdirAll(root, 0o700)
		if _, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: root}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("root %s: %v", root, err)
		}
	}
	// Negative control: a project folder opens.
	if _, err := c.OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: e.Root}); err != nil {
		t.Fatal(err)
	}
}

// Found by red team (class 1 pass). A session's root that a read rule of the team or the user denies is refused
// before it is looked at, the same whether it exists, is a folder, a file or a link to a folder: OpenSession does
// not tell a front end what lies in a hidden tree. Control: with no rule, the answers differ.
func TestRootARuleHidesIsRefusedAlike(t *testing.T) {
	worlds := map[string]func(p string){
		"missing":  func(string) {},
		"a folder": func(p string) { os.MkdirAll(filepath.Join(p, ".garuda"), 0o755) },
		"a file":   func(p string) { brokertest.MustWrite(t, p, "x") },
		"a link":   func(p string) { os.MkdirAll(filepath.Dir(p), 0o755); os.Symlink("/etc", p) },
	}
	for _, rule := range []string{"", "Read(//%s/**)", "Read(//%s)"} {
		seen := map[string]string{}
		for name, make := range worlds {
			base := t.TempDir()
			tree := filepath.Join(base, "tree")
			e := brokertest.NewIn(t, base, filepath.Join(base, "project"), filepath.Join(base, "home"))
			if rule != "" {
				e.Team(t, `{"permissions": {"deny": ["`+fmt.Sprintf(rule, strings.TrimPrefix(tree, "/"))+`"]}}`)
			}
			make(filepath.Join(tree, "sub"))
			_, err := e.Client().OpenSession(brokertest.Ctx(t), &execv1.OpenSessionRequest{Root: filepath.Join(tree, "sub")})
			seen[strings.ReplaceAll(fmt.Sprint(err), base, "$BASE")] = name
		}
		switch {
		case rule != "" && len(seen) != 1:
			t.Errorf("with %s, OpenSession tells the worlds apart: %v", rule, seen)
		case rule == "" && len(seen) == 1:
			t.Errorf("control: with no rule, OpenSession should tell the worlds apart: %v", seen)
		}
	}
}
