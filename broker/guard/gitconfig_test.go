package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

// gitList is git's own reading of a config file (`git config --file F --list`), the oracle of these tests.
func gitList(t *testing.T, data string) ([]string, bool) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--list", "--no-includes")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil, true
	}
	return lines, true
}

// mine is the parser's reading in git's --list format (a key without a value lists without "=").
func mine(data string) ([]string, bool) {
	entries, err := parseConfig([]byte(data))
	if err != nil {
		return nil, false
	}
	var out []string
	for _, e := range entries {
		if e.noValue {
			out = append(out, e.name())
		} else {
			out = append(out, e.name()+"="+e.value)
		}
	}
	return out, true
}

// trickyConfigs are spellings by which a key could read one way to git and another way to a careless parser.
var trickyConfigs = []string{
	"[core]\n\tfsmonitor = /tmp/x\n",
	"[core] fsmonitor = /tmp/x\n",
	"[core]fsmonitor=/tmp/x",
	"[CoRe]\n\tFsMonitor = x\n",
	"[core]\n\tfsmonitor = \"a b\" ; comment\n",
	"[core]\n\tfsmonitor = a\\\nb\n",
	"[core]\n\tfsmonitor = \"a\\\"b\\\\c\\td\"\n",
	"[core]\r\n\tfsmonitor = crlf\r\n",
	"\xef\xbb\xbf[core]\n\tfsmonitor = bom\n",
	"[core.sub]\n\tx = 1\n",
	"[diff \"My.Driver\"]\n\ttextconv = cat\n",
	"[diff \"a\\\"b\"]\n\tcommand = x\n",
	"[diff.Foo]\n\tcommand = x\n",
	"[alias]\n\tst = !sh -c evil\n\tco = checkout\n",
	"[core]\n\tbare\n\tfsmonitor\n",
	"# comment\n; another\n[core] ; c\n\teditor = vi # c\n",
	"[core]\n\tfsmonitor = \"unterminated\n",
	"[core\n\tfsmonitor = x\n",
	"fsmonitor = x\n",
	"[core]\n\t1x = y\n",
	"[core]\n\tfsmonitor = a \\q\n",
	"[core]\n\tfsmonitor = x\n[core]\n\tfsmonitor = y\n",
	"[include]\n\tpath = other\n[includeIf \"gitdir:/x/\"]\n\tpath = /tmp/evil\n",
	"[core]\n\tfsmonitor = \"a;b#c\"\n",
	"[core]\n\tfsmonitor =    \n",
	"[core]   \n  \tfsmonitor=\"\"\n",
	"[filter \"lfs\"] smudge = x\n\tclean = y\n",
}

func TestParseConfigReadsLikeGit(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	compared := 0
	defer func() {
		if compared < 20 {
			t.Errorf("git read only %d of the configs: the oracle is not working", compared)
		}
	}()
	for _, c := range trickyConfigs {
		want, gitOK := gitList(t, c)
		got, ok := mine(c)
		if gitOK {
			compared++
		}
		switch {
		case !gitOK && ok:
			// git refuses the file, and so runs nothing from it; the neutraliser replaces it whole anyway (below).
		case gitOK && !ok:
			t.Errorf("%q: git reads %v, the parser refuses it", c, want)
		case gitOK && !slices.Equal(got, want):
			t.Errorf("%q:\n git reads %q\n the parser %q", c, want, got)
		}
	}
}

// TestNeutralizeConfigAsGitSeesIt: after the cut, git itself finds none of the keys that run programs, and keeps
// the others. Control: before the cut git finds them.
func TestNeutralizeConfigAsGitSeesIt(t *testing.T) {
	testenv.NeedCommand(t, "git", "git")
	evil := []string{
		"[core]\n\tfsmonitor = /tmp/x\n\thooksPath = .githooks\n\tsshCommand = x\n\tpager = x\n\teditor = x\n\taskPass = x\n" +
			"\tgitProxy = x\n",
		"[core] fsmonitor = x\n[user]\n\tname = kept\n",
		"[credential]\n\thelper = !x\n[credential \"https://h\"]\n\thelper = y\n",
		"[diff]\n\texternal = x\n[diff \"d\"]\n\ttextconv = x\n\tcommand = y\n[merge \"m\"]\n\tdriver = z\n",
		"[filter \"f\"]\n\tclean = a\n\tsmudge = b\n\tprocess = c\n\trequired = true\n",
		"[alias]\n\tx = !evil\n\tst = status\n[sequence]\n\teditor = e\n[gpg]\n\tprogram = p\n[gpg \"ssh\"]\n\tprogram = q\n" +
			"\tdefaultKeyCommand = r\n",
		"[include]\n\tpath = ../x\n[includeIf \"onbranch:main\"]\n\tpath = /tmp/y\n",
		"[http]\n\tproxy = h\n[http \"https://x\"]\n\tproxy = h\n[remote \"origin\"]\n\turl = /src\n\tproxy = p\n\treceivepack = r\n" +
			"\tuploadpack = u\n",
		"[uploadpack]\n\tpackObjectsHook = x\n[protocol]\n\tallow = always\n[protocol \"ext\"]\n\tallow = always\n[protocol \"file\"]\n" +
			"\tallow = user\n",
		"[lfs]\n\turl = https://evil\n[lfs \"customtransfer.x\"]\n\tpath = /bin/evil\n[remote \"origin\"]\n\tlfsurl = https://evil\n",
		"[submodule \"s\"]\n\tupdate = !evil\n[pager]\n\tlog = evil\n[interactive]\n\tdiffFilter = evil\n[core]\n" +
			"\talternateRefsCommand = x\n",
		"[url \"https://evil/\"]\n\tinsteadOf = https://github.com/\n[trace2]\n\teventTarget = af_unix:/tmp/s\n",
		"[diff.Foo]\n\tcommand = x\n[CORE]\n\tFSMONITOR = y\n",
		"[core]\n\tfsmonitor = \"unterminated\n",
		"[core]\n\tfsmonitor = a\\\n\t\tb\n",
	}
	for _, c := range evil {
		before, _ := gitList(t, c)
		out, removed := neutralizeConfig([]byte(c))
		got, ok := gitList(t, string(out))
		if !ok {
			t.Errorf("%q: git cannot read the result %q", c, out)
			continue
		}
		for _, kv := range got {
			name, value, _ := strings.Cut(kv, "=")
			if runs(entry{base: name[:strings.LastIndexByte(name, '.')], key: name[strings.LastIndexByte(name, '.')+1:], value: value}) {
				t.Errorf("%q: git still reads %s after the cut %q", c, kv, out)
			}
		}
		if len(removed) == 0 {
			t.Errorf("%q: nothing removed", c)
		}
		for _, keep := range []string{"user.name=kept", "alias.st=status", "remote.origin.url=/src", "filter.f.required=true",
			"protocol.file.allow=user"} {
			if slices.Contains(before, keep) && !slices.Contains(got, keep) {
				t.Errorf("%q: the harmless %s was removed too", c, keep)
			}
		}
	}
	// Control: git reads the dangerous keys from the uncut files.
	if got, _ := gitList(t, evil[0]); !slices.Contains(got, "core.fsmonitor=/tmp/x") {
		t.Fatalf("control: git does not read core.fsmonitor: %v", got)
	}
	// An ordinary repository's config is left as it is.
	plain := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n[user]\n\tname = x\n[remote \"origin\"]\n" +
		"\turl = /src\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
	if out, removed := neutralizeConfig([]byte(plain)); string(out) != plain || removed != nil {
		t.Errorf("a plain config changed: %q %v", out, removed)
	}
}

// TestProgramPathsReadsWordsAsTheShell: the paths a program-running config value names are found as sh splits it,
// with transcrypt's "$(git rev-parse --git-common-dir)" read as the git folder; URLs, plain program names and
// what lies outside the root are not paths in it.
func TestProgramPathsReadsWordsAsTheShell(t *testing.T) {
	g := New("/r", Options{UserHome: "/r/home"})
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	if got := New(dir, Options{}).programPaths("tools/lint src/", "", "", "", false); strings.Join(got, "|") != "tools/lint" {
		t.Errorf("a folder is an argument, not a program: %q", got)
	}
	for value, want := range map[string][]string{
		`"$(git rev-parse --git-common-dir)"/crypt/clean %f`: {".git/crypt/clean"},
		`$(git rev-parse --git-dir)/crypt/textconv`:          {"sub/.git/crypt/textconv"},
		`tools/fsm.sh`:                      {"tools/fsm.sh"},
		`!./scripts/a 'my dir/b' && c|d/e`:  {"scripts/a", "my dir/b", "d/e"},
		`"/r/x y/z" --flag=1;/usr/bin/true`: {"x y/z"},
		`~/bin/helper`:                      {"home/bin/helper"},
		`store --file=/r/.creds`:            {".creds"},
		`http://proxy:3128`:                 nil,
		`git-lfs filter-process`:            nil,
		`"$HOME/x" ../../outside/p`:         nil,
	} {
		got := g.programPaths(value, "", ".git", "sub/.git", false)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: %q, want %q", value, got, want)
		}
	}
}
