package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The ACP Registry's checker (.github/workflows/verify_agents.py --auth-check, with client.py, of
// agentclientprotocol/registry) downloads the archive of its platform, extracts it, and runs the entry's cmd and
// args in the extraction folder with an empty HOME, TERM=dumb and only a few variables of its own (PATH among them);
// it sends one initialize with _meta["terminal-auth"], reads one line from stdout, and wants an auth method of type
// agent or terminal in it. These tests do the same with the archive of this machine's platform.

// checkerInitialize is the checker's initialize request; withMeta false leaves out its capabilities' _meta.
func checkerInitialize(withMeta bool) []byte {
	caps := map[string]any{
		"terminal": true,
		"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
	}
	if withMeta {
		caps["_meta"] = map[string]any{"terminal_output": true, "terminal-auth": true}
	}
	msg, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{
			"protocolVersion":    1,
			"clientInfo":         map[string]any{"name": "ACP Registry Validator", "version": "1.0.0"},
			"clientCapabilities": caps,
		},
	})
	return append(msg, '\n')
}

type authMethod struct{ id, kind string }

// checkInitialize judges the first stdout line as the checker does: it must be JSON, not an error, and list an
// auth method whose type (its "type", else from its _meta, else "agent") is agent or terminal.
func checkInitialize(line []byte) (map[string]any, []authMethod, error) {
	var resp map[string]any
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, nil, fmt.Errorf("ACP spec violation: agent wrote non-JSON to stdout: %q", line)
	}
	if e, ok := resp["error"]; ok {
		return nil, nil, fmt.Errorf("agent error: %v", e)
	}
	result, _ := resp["result"].(map[string]any)
	raw, _ := result["authMethods"].([]any)
	var methods []authMethod
	valid := false
	for _, r := range raw {
		m, _ := r.(map[string]any)
		id, _ := m["id"].(string)
		kind, _ := m["type"].(string)
		if kind == "" {
			meta, _ := m["_meta"].(map[string]any)
			switch {
			case meta["terminal-auth"] != nil:
				kind = "terminal"
			case meta["agent-auth"] != nil:
				kind = "agent"
			default:
				kind = "agent"
			}
		}
		methods = append(methods, authMethod{id, kind})
		valid = valid || kind == "agent" || kind == "terminal"
	}
	switch {
	case len(methods) == 0:
		return result, nil, errors.New("no authMethods in response")
	case !valid:
		return result, methods, fmt.Errorf("no auth method with type agent or terminal: %v", methods)
	}
	return result, methods, nil
}

// The judge itself: what the checker refuses, it refuses.
func TestCheckInitializeRefuses(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`garuda: starting`, "non-JSON to stdout"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}`, "agent error"},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"authMethods":[]}}`, "no authMethods"},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"authMethods":[{"id":"k","name":"Key","type":"env_var"}]}}`,
			"no auth method with type agent or terminal"},
	} {
		if _, _, err := checkInitialize([]byte(c.line)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.line, err, c.want)
		}
	}
	if _, m, err := checkInitialize([]byte(`{"jsonrpc":"2.0","id":1,"result":{"authMethods":[{"id":"s","name":"S","_meta":{"terminal-auth":{}}}]}}`)); err != nil || m[0].kind != "terminal" {
		t.Errorf("a method marked by _meta: %v %v", m, err)
	}
}

// hostPlatform is the release's platform of this machine.
func hostPlatform(t *testing.T) platform {
	t.Helper()
	for _, p := range platforms {
		if p.goos == runtime.GOOS && p.goarch == runtime.GOARCH {
			return p
		}
	}
	t.Fatalf("the release has no build for %s/%s, so its archive cannot be run here", runtime.GOOS, runtime.GOARCH)
	return platform{}
}

// installed extracts the host's archive of dist as the checker does and returns the folder with the entry's
// command and arguments for the host.
func installed(t *testing.T, dist string) (dir, exe string, args []string) {
	t.Helper()
	p := hostPlatform(t)
	var e agentEntry
	data, err := os.ReadFile(filepath.Join(dist, entryDir, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	target := e.Distribution.Binary[p.name]
	archive := filepath.Join(dist, target.Archive[strings.LastIndex(target.Archive, "/")+1:])
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "extracted")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	eachTarMember(t, gz, func(h *tar.Header, content io.Reader) {
		if strings.Contains(h.Name, "/") || h.Typeflag != tar.TypeReg {
			t.Fatalf("archive member %q (type %c): want only regular files at the top", h.Name, h.Typeflag)
		}
		out, err := os.OpenFile(filepath.Join(dir, h.Name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(h.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, content); err != nil {
			t.Fatal(err)
		}
		out.Close()
	})
	return dir, filepath.Join(dir, strings.TrimPrefix(target.Cmd, "./")), target.Args
}

// checkerEnv is the environment the checker gives the agent: an empty HOME, TERM=dumb, and a PATH with no
// garuda-exec on it, so that the broker can only be the one beside garuda.
func checkerEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	path := []string{filepath.Join(home, ".local", "bin"), "/usr/local/bin", "/usr/bin", "/bin"}
	for _, d := range path {
		if _, err := os.Stat(filepath.Join(d, "garuda-exec")); err == nil {
			t.Fatalf("%s holds a garuda-exec: the test could not tell it from the archive's", d)
		}
	}
	return []string{"HOME=" + home, "TERM=dumb", "PATH=" + strings.Join(path, ":")}
}

// handshake runs the checker's exchange and returns the first stdout line.
func handshake(t *testing.T, dir, exe string, args, env []string, withMeta bool) []byte {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		// The checker ends the agent with SIGTERM, and SIGKILL two seconds later.
		cmd.Process.Signal(syscall.SIGTERM)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("garuda acp was still running 10 s after SIGTERM\nstderr:\n%s", stderr.String())
		}
	}()
	if _, err := stdin.Write(checkerInitialize(withMeta)); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []byte, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadBytes('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		return line
	case <-time.After(60 * time.Second):
		t.Fatalf("no line on stdout within 60 s\nstderr:\n%s", stderr.String())
		return nil
	}
}

// The archived binary passes the registry's handshake, with the terminal auth method and the release's version.
func TestArchiveRegistryHandshake(t *testing.T) {
	dist := releaseOnce(t)
	dir, exe, args := installed(t, dist)
	env := checkerEnv(t)
	result, methods, err := checkInitialize(handshake(t, dir, exe, args, env, true))
	if err != nil {
		t.Fatalf("the registry's checker would refuse the archived garuda: %v", err)
	}
	if len(methods) != 1 || methods[0] != (authMethod{"garuda-setup", "terminal"}) {
		t.Errorf("auth methods %v, want the terminal method garuda-setup", methods)
	}
	if info, _ := result["agentInfo"].(map[string]any); info["name"] != "garuda" || info["version"] != testVersion {
		t.Errorf("agentInfo %v, want garuda %s", result["agentInfo"], testVersion)
	}

	// Negative control: the same exchange without the older capability gets no auth method, and the checker
	// refuses it; so the pass above comes from _meta["terminal-auth"].
	if _, _, err := checkInitialize(handshake(t, dir, exe, args, env, false)); err == nil || !strings.Contains(err.Error(), "no authMethods") {
		t.Errorf("without _meta[\"terminal-auth\"]: %v, want no auth methods", err)
	}
}

// Installed from the archive, garuda works as after make install: the binaries print the release's version,
// garuda finds and starts the garuda-exec beside it, which runs the garuda-sandbox beside it (garuda doctor with the
// checker's environment).
func TestArchiveInstall(t *testing.T) {
	dist := releaseOnce(t)
	dir, exe, _ := installed(t, dist)
	env := checkerEnv(t)
	output := func(prog string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, prog), args...)
		cmd.Dir = t.TempDir()
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
		}
		return string(out)
	}
	if got, want := output("garuda", "--version"), fmt.Sprintf("garuda %s (%s/%s)\n", testVersion, runtime.GOOS, runtime.GOARCH); got != want {
		t.Errorf("garuda --version printed %q, want %q", got, want)
	}
	if got, want := output("garuda-exec", "--version"), "garuda-exec "+testVersion+" (broker API v1)\n"; got != want {
		t.Errorf("garuda-exec --version printed %q, want %q", got, want)
	}
	if got, want := output("garuda-sandbox", "--version"), "garuda-sandbox "+testVersion+" (sandbox protocol "; !strings.HasPrefix(got, want) {
		t.Errorf("garuda-sandbox --version printed %q, want %q...", got, want)
	}
	if filepath.Base(exe) != "garuda" {
		t.Fatalf("the entry runs %s, want garuda", exe)
	}
	doctor := output("garuda", "doctor")
	for _, want := range []string{filepath.Join(dir, "garuda-exec"), "yes: garuda-exec " + testVersion,
		filepath.Join(dir, "garuda-sandbox") + " (garuda-sandbox " + testVersion + ")"} {
		if !strings.Contains(doctor, want) {
			t.Errorf("garuda doctor does not say %q:\n%s", want, doctor)
		}
	}
}
