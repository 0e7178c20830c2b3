package test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/test/release"
)

const module = "github.com/garuda-dev/garuda"

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// powerful reports whether an import path is a package of the privileged side.
func powerful(p string) bool {
	for _, root := range []string{module + "/broker", module + "/policy"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// The front end holds no power: neither cmd/garuda nor frontend/ may depend, even indirectly, on broker/ or policy/.
func TestFrontEndHasNoBrokerOrPolicy(t *testing.T) {
	deps := goList(t, "-deps", "./cmd/garuda", "./frontend/...")
	var bad []string
	for _, d := range deps {
		if powerful(d) {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("the front end depends on the privileged side: %v", bad)
	}
	if !slices.Contains(deps, module+"/frontend/cli") {
		t.Fatalf("go list found no front-end package; the guard checks nothing")
	}
}

// Only named packages of the front end may start processes or use Landlock.
func TestFrontEndPowerIsInNamedPackages(t *testing.T) {
	allowed := map[string]string{
		"os/exec": module + "/frontend/brokerconn",
		"github.com/landlock-lsm/go-landlock/landlock":         module + "/frontend/confine",
		"github.com/landlock-lsm/go-landlock/landlock/syscall": module + "/frontend/confine",
	}
	lines := goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./cmd/garuda", "./frontend/...")
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		for _, imp := range f[1:] {
			if want, ok := allowed[imp]; ok {
				seen[imp] = true
				if f[0] != want {
					t.Errorf("%s imports %s; only %s may", f[0], imp, want)
				}
			}
		}
	}
	if !seen["os/exec"] {
		t.Errorf("no front-end package imports os/exec, not even %s: the guard is out of date", allowed["os/exec"])
	}
	// Other ways to start a process, which an import list does not show: only brokerconn's spawn (garuda-exec, at
	// garuda run's package initialisation or from brokerconn) calls them.
	dirs := goList(t, "-f", `{{.Dir}}`, "./cmd/garuda", "./frontend/...")
	spawner := 0
	for _, dir := range dirs {
		if strings.HasSuffix(filepath.ToSlash(dir), "/frontend/brokerconn/spawn") {
			spawner++
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range []string{"os.StartProcess", "syscall.ForkExec", "syscall.Exec(", "unix.Exec(", "syscall.StartProcess"} {
				if strings.Contains(string(src), call) {
					t.Errorf("%s calls %s: the front end starts processes only in frontend/brokerconn/spawn", f, call)
				}
			}
		}
	}
	if spawner != 1 {
		t.Errorf("frontend/brokerconn/spawn was not found among the front end's packages: the guard is out of date")
	}
}

// Every package has exactly one package doc comment.
func TestOnePackageDocEach(t *testing.T) {
	dirs := goList(t, "-f", `{{.Dir}}`, "./...")
	for _, dir := range dirs {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(),
				"_test.go")
		}, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range pkgs {
			var docs []string
			for fname, f := range p.Files {
				if f.Doc != nil {
					docs = append(docs, filepath.Base(fname))
				}
			}
			if len(docs) != 1 {
				t.Errorf("package %s in %s has %d package doc comments %v; want exactly one", name, dir, len(docs), docs)
			}
		}
	}
}

// The privileged binary's dependencies are a reviewed list: a new one must show up in a diff of
// cmd/garuda-exec/deps.txt. Regenerate with: go test ./test -run TestBrokerDeps (GARUDA_UPDATE_DEPS=1)
func TestBrokerDeps(t *testing.T) { checkDepsList(t, "garuda-exec", "TestBrokerDeps") }

// The sandbox's helper is of the privileged half too (every sandboxed command's pid 1 runs it): its dependencies are
// a reviewed list, cmd/garuda-sandbox/deps.txt, regenerated as TestBrokerDeps's. And it links none of the broker's
// heavy packages, whose package initialisation every command's start would pay again (issue 21): not grpc,
// protobuf, the MCP SDK, net/http, TLS, x/net/html, nor the rest of the broker.
func TestSandboxHelperDeps(t *testing.T) {
	checkDepsList(t, "garuda-sandbox", "TestSandboxHelperDeps")
	heavy := func(p string) bool {
		for _, prefix := range []string{"net/http", "crypto/tls", "crypto/x509", "html", "text/template", "encoding/gob",
			"google.golang.org/", "github.com/modelcontextprotocol/", "golang.org/x/net/html", "golang.org/x/net/http",
			module + "/proto", module + "/policy", module + "/frontend"} {
			if p == prefix || strings.HasPrefix(p, strings.TrimSuffix(prefix, "/")+"/") {
				return true
			}
		}
		return powerful(p) && p != module+"/broker/sandbox"
	}
	deps := goList(t, "-deps", "-tags", release.Tags, "./cmd/garuda-sandbox")
	for _, d := range deps {
		if heavy(d) {
			t.Errorf("garuda-sandbox links %s: every sandboxed command's start would pay its init; keep it in the broker", d)
		}
	}
	if !slices.Contains(deps, module+"/broker/sandbox") {
		t.Fatalf("garuda-sandbox does not link broker/sandbox: the guard looks at the wrong package")
	}
	// Control: the rule names what the broker links.
	var caught []string
	for _, d := range goList(t, "-deps", "-tags", release.Tags, "./cmd/garuda-exec") {
		if heavy(d) {
			caught = append(caught, d)
		}
	}
	for _, want := range []string{"net/http", "google.golang.org/grpc", "google.golang.org/protobuf/proto",
		"github.com/modelcontextprotocol/go-sdk/mcp", "golang.org/x/net/html", module + "/broker", module + "/policy"} {
		if !slices.Contains(caught, want) {
			t.Errorf("the guard would let %s (which garuda-exec links) into garuda-sandbox: it is out of date", want)
		}
	}
}

// checkDepsList fails when the non-standard dependencies of cmd/<name> differ from cmd/<name>/deps.txt; with
// GARUDA_UPDATE_DEPS=1 it writes the list first.
func checkDepsList(t *testing.T, name, test string) {
	t.Helper()
	got := goList(t, "-deps", "-tags", release.Tags, "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, "./cmd/"+name)
	got = slices.DeleteFunc(got, func(s string) bool { return s == "" })
	slices.Sort(got)
	path := filepath.Join("..", "cmd", name, "deps.txt")
	if os.Getenv("GARUDA_UPDATE_DEPS") == "1" {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the reviewed dependency list: %v", err)
	}
	want := strings.Fields(string(data))
	for _, d := range got {
		if !slices.Contains(want, d) {
			t.Errorf("%s has a new dependency %s: review it, then run GARUDA_UPDATE_DEPS=1 go test ./test -run "+
				"%s and commit cmd/%s/deps.txt", name, d, test, name)
		}
	}
	for _, d := range want {
		if !slices.Contains(got, d) {
			t.Errorf("%s no longer depends on %s: update cmd/%s/deps.txt (GARUDA_UPDATE_DEPS=1)", name, d, name)
		}
	}
}

// testOnly reports whether a package of the module is a helper for tests (a broker on a temp root, a fake server or
// provider, the process and command helpers): none may be linked into a shipped binary.
func testOnly(p string) bool {
	rel, ok := strings.CutPrefix(p, module+"/")
	return ok && (rel == "test" || strings.HasPrefix(rel, "test/") || strings.HasPrefix(rel, "internal/test") ||
		strings.HasSuffix(rel, "test") || strings.Contains(rel, "test/") || rel == "frontend/model/fakeprovider")
}

// The helpers of the tests (broker/brokertest, internal/testproc, internal/testenv, mcptest, the fake provider,
// test/...) stay out of the shipped binaries: brokertest serves a broker that trusts its own uid, testproc signals
// processes.
func TestTestHelpersAreNotShipped(t *testing.T) {
	for _, d := range goList(t, "-deps", "-tags", release.Tags, "./cmd/garuda", "./cmd/garuda-exec", "./cmd/garuda-sandbox") {
		if testOnly(d) {
			t.Errorf("a shipped binary links the test helper %s", d)
		}
	}
	// Control: the rule names the helpers the tree has.
	pkgs := goList(t, "./...")
	for _, p := range []string{"broker/brokertest", "internal/testproc", "internal/testenv", "broker/mcphost/mcptest",
		"frontend/model/fakeprovider", "test/nobody"} {
		if !slices.Contains(pkgs, module+"/"+p) || !testOnly(module+"/"+p) {
			t.Errorf("%s is not a package the guard knows as a test helper: the guard is out of date", p)
		}
	}
	if testOnly(module + "/broker") {
		t.Error("the guard takes the broker for a test helper")
	}
}

// The Makefile builds what the process tests, the benchmarks and make release run: the settings of test/release.
func TestMakefileBuildsRelease(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "BUILD ") {
			line = l
		}
	}
	for _, want := range []string{"CGO_ENABLED=" + release.CGO + " ", "-tags " + release.Tags, "-trimpath"} {
		if !strings.Contains(line, want) {
			t.Errorf("the Makefile's BUILD line %q lacks %q (test/release)", strings.TrimSpace(line), want)
		}
	}
	var ldflags string
	for l := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(l, "LDFLAGS "); ok {
			ldflags = strings.TrimSpace(strings.TrimLeft(v, " :="))
		}
	}
	if want := release.LDFlags("$(VERSION)"); ldflags != want {
		t.Errorf("the Makefile's LDFLAGS are %q; test/release (and so make release) stamps %q", ldflags, want)
	}
	for l := range strings.Lines(string(data)) {
		if strings.Contains(l, "go build") || strings.Contains(l, "$(GO) build") {
			if !strings.HasPrefix(l, "BUILD ") {
				t.Errorf("the Makefile builds without $(BUILD): %q", strings.TrimSpace(l))
			}
		}
	}
}
