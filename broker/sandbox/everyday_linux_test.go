package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEverydayGoTest: `go test` of a small module whose test serves on 127.0.0.1 works in the sandbox, with the
// build cache in a writable cache folder handed over through GOCACHE.
func TestEverydayGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the net package from an empty cache")
	}
	goroot := "/usr/local/go"
	if _, err := os.Stat(filepath.Join(goroot, "bin", "go")); err != nil {
		t.Skip("no Go toolchain at /usr/local/go")
	}
	f := newFixture(t)
	cache := filepath.Join(f.base, "cache")
	must(t, os.MkdirAll(filepath.Join(cache, "go-build"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.root, "go.mod"), []byte("module example.com/srv\n\ngo 1.26\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.root, "srv_test.go"), []byte(`package srv

import (
	"io"
	"net"
	"testing"
)

func TestServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, _ := l.Accept()
		c.Write([]byte("hi"))
		c.Close()
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	if string(b) != "hi" {
		t.Fatalf("got %q", b)
	}
}
`), 0o644))
	s := f.spec("go test ./... && go get example.com/nothing@v1.0.0")
	s.Writable = append(s.Writable, cache)
	s.Timeout = MaxTimeout // compiling net from an empty cache under -race beside the other packages can take minutes
	s.Env = BaseEnv(f.home, f.tmp, map[string]string{"GOCACHE": filepath.Join(cache, "go-build"), "GOTOOLCHAIN": "local",
		"GOMODCACHE": filepath.Join(cache, "mod"), "GOPROXY": "https://proxy.golang.org"})
	s.Env = append(s.Env, "PATH="+filepath.Join(goroot, "bin")+":/usr/bin:/bin")
	r := f.run(s)
	o := string(r.Output)
	if !strings.Contains(o, "ok  \texample.com/srv") {
		t.Fatalf("go test in the sandbox: exit %d %q", r.ExitCode, o)
	}
	// What needs the network fails, with an error that says so.
	if r.ExitCode == 0 || !(strings.Contains(o, "dial tcp") || strings.Contains(o, "lookup proxy.golang.org")) {
		t.Errorf("module download: exit %d %q", r.ExitCode, o)
	}
	t.Logf("%s", o)
}
