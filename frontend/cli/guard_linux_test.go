package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets the test binary play the front end: with GARUDA_TEST_STDOUT set it writes to stdout in every way a
// library or a child could, with the guard on ("guard") or off ("off"), then writes one protocol line.
func TestMain(m *testing.M) {
	switch os.Getenv("GARUDA_TEST_STDOUT") {
	case "":
		os.Exit(m.Run())
	case "guard":
		protocol, err := guardStdout()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		noise()
		protocol.WriteString("{\"jsonrpc\":\"2.0\"}\n")
	case "off":
		noise()
		os.Stdout.WriteString("{\"jsonrpc\":\"2.0\"}\n")
	}
	os.Exit(0)
}

func noise() {
	fmt.Println("noise: fmt.Println")
	fmt.Fprintf(os.Stdout, "noise: %s\n", "os.Stdout")
	syscall.Write(1, []byte("noise: write(1)\n"))
	child := exec.Command("/bin/sh", "-c", "echo noise: a child")
	child.Stdout = os.Stdout
	child.Run()
}

// The stdout guard: whatever else writes to stdout (fmt, a library's write to fd 1, a child that inherits it) lands
// on stderr, and only the protocol's own lines reach the real stdout. Control: without the guard the noise is on
// stdout.
func TestStdoutGuard(t *testing.T) {
	run := func(mode string) (stdout, stderr string) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "GARUDA_TEST_STDOUT="+mode, "GORACE=atexit_sleep_ms=0")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, e.String())
		}
		return o.String(), e.String()
	}
	out, errs := run("guard")
	if out != "{\"jsonrpc\":\"2.0\"}\n" {
		t.Errorf("stdout with the guard = %q, want only the protocol line", out)
	}
	for _, n := range []string{"fmt.Println", "os.Stdout", "write(1)", "a child"} {
		if !strings.Contains(errs, "noise: "+n) {
			t.Errorf("the %s noise did not reach stderr: %q", n, errs)
		}
	}
	if out, _ := run("off"); !strings.Contains(out, "noise: fmt.Println") || !strings.Contains(out, "noise: a child") {
		t.Errorf("control: without the guard stdout = %q", out)
	}
}
