package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/garuda-dev/garuda/frontend/model/fakeprovider"

	"github.com/garuda-dev/garuda/internal/testproc"
)

// runEnv is a home with models.json pointing at a fake provider, and a project folder.
type runEnv struct {
	t          *testing.T
	home, root string
	provider   *fakeprovider.Server
	env        []string // more of the run's environment
	garuda     string   // the garuda to run; empty: bins.garuda
}

func newRunEnv(t *testing.T, turns ...fakeprovider.Turn) *runEnv {
	t.Helper()
	needBins(t)
	srv, err := fakeprovider.Serve("127.0.0.1:0", turns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	e := &runEnv{t: t, home: t.TempDir(), root: t.TempDir(), provider: srv}
	models := fakeModels(srv.URL)
	if err := os.WriteFile(filepath.Join(e.home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// command is garuda run with args in the project folder, in a session of its own: no controlling terminal.
func (e *runEnv) command(args ...string) *exec.Cmd {
	bin := bins.garuda
	if e.garuda != "" {
		bin = e.garuda
	}
	cmd := exec.Command(bin, append([]string{"run"}, args...)...)
	cmd.Dir = e.root
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + e.home, "HOME=" + e.home, "LOCAL_API_KEY=k", "TMPDIR=" + e.t.TempDir()},
		e.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// run runs garuda run to its end and returns its exit code, stdout and stderr.
func (e *runEnv) run(args ...string) (int, string, string) {
	e.t.Helper()
	cmd := e.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// events parses --json output; any line that is not a JSON object fails the test.
func events(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSuffix(stdout, "\n"), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not a JSON event: %q (%v)\nstdout:\n%s", line, err, stdout)
		}
		evs = append(evs, ev)
	}
	return evs
}

// questionsOfOneCall runs garuda run --json with flag and prompt against a model that makes the call and then says
// "ok"; it fails the test unless the run exits 0, and returns the questions the run reported.
func questionsOfOneCall(t *testing.T, call fakeprovider.ToolCall, flag, prompt string) []map[string]any {
	t.Helper()
	e := newRunEnv(t, fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{call}}, fakeprovider.Turn{Text: "ok"})
	code, stdout, stderr := e.run("--json", flag, prompt)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	return ofType(events(t, stdout), "question")
}

func ofType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

func writeTurns(content string) []fakeprovider.Turn {
	in, _ := json.Marshal(map[string]string{"path": "a.txt", "content": content})
	return []fakeprovider.Turn{
		{Text: "Writing it.", ToolCalls: []fakeprovider.ToolCall{{ID: "w1", Name: "write_file", Input: string(in)}}},
		{Text: "Done."},
	}
}

// A turn with an edit in --json, answered by --allow-edits with no terminal; without the flag the same question is
// denied (the control), and the file stays unwritten.
func TestRunJSONAllowEdits(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("allow-edits=%v", allow), func(t *testing.T) {
			e := newRunEnv(t, writeTurns("hello\n")...)
			args := []string{"--json", "write a.txt"}
			if allow {
				args = append([]string{"--allow-edits"}, args...)
			}
			code, stdout, stderr := e.run(args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			evs := events(t, stdout)
			if evs[0]["type"] != "session" || evs[0]["sessionId"] == "" {
				t.Errorf("the first event is not the session: %v", evs[0])
			}
			qs := ofType(evs, "question")
			if len(qs) != 1 || qs[0]["kind"] != "write" || qs[0]["outsideRoot"] != false {
				t.Fatalf("questions: %v", qs)
			}
			got, err := os.ReadFile(filepath.Join(e.root, "a.txt"))
			stop := ofType(evs, "stop")
			if len(stop) != 1 || stop[0]["stopReason"] != "end_turn" || stop[0]["exitCode"] != 0.0 {
				t.Fatalf("stop: %v", stop)
			}
			if allow {
				if qs[0]["answer"] != "once" || qs[0]["by"] != "--allow-edits" || err != nil || string(got) != "hello\n" {
					t.Fatalf("question %v, file %q %v", qs[0], got, err)
				}
				if ch, _ := stop[0]["changed"].([]any); len(ch) != 1 || ch[0] != "a.txt" {
					t.Errorf("changed: %v", stop[0]["changed"])
				}
			} else {
				if qs[0]["answer"] != "deny" || !strings.Contains(qs[0]["by"].(string), "--allow-edits would") || err == nil {
					t.Fatalf("question %v, file %q %v", qs[0], got, err)
				}
			}
			var text strings.Builder
			for _, ev := range ofType(evs, "text") {
				text.WriteString(ev["text"].(string))
			}
			if !strings.Contains(text.String(), "Done.") {
				t.Errorf("text events: %q", text.String())
			}
			calls, updates := ofType(evs, "tool_call"), ofType(evs, "tool_update")
			if len(calls) != 1 || calls[0]["kind"] != "edit" || len(updates) == 0 {
				t.Errorf("tool events: %v %v", calls, updates)
			}
		})
	}
}

// The plain face: the answer alone on stdout; the tool line, the question and what changed on stderr.
func TestRunTextOutput(t *testing.T) {
	e := newRunEnv(t, writeTurns("hi\n")...)
	code, stdout, stderr := e.run("write", "a.txt", "--allow-edits") // a flag after the words
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if stdout != "Writing it.Done.\n" {
		t.Errorf("stdout %q, want only the answer", stdout)
	}
	for _, want := range []string{"▸ Write", "✓ Write", "allowed once (--allow-edits)", "Changed: a.txt", "garuda undo --session "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	bash := func(cmd string) []fakeprovider.Turn {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return []fakeprovider.Turn{{ToolCalls: []fakeprovider.ToolCall{{ID: "b1", Name: "bash", Input: string(in)}}}, {Text: "x"}}
	}
	cases := []struct {
		name  string
		turns []fakeprovider.Turn
		args  []string
		code  int
		want  string // in stderr
	}{
		{"end turn", []fakeprovider.Turn{{Text: "ok"}}, []string{"hi"}, 0, ""},
		{"refusal", []fakeprovider.Turn{{Text: "no", StopReason: "refusal"}}, []string{"hi"}, 4, "refusal"},
		{"max tokens", []fakeprovider.Turn{{Text: "cut", StopReason: "max_tokens"}}, []string{"hi"}, 5, "max tokens"},
		{"max steps", bash("true"), []string{"--max-steps", "1", "hi"}, 6, "max turn requests"},
		{"provider error", []fakeprovider.Turn{{Status: 401, Message: "invalid x-api-key"}}, []string{"hi"}, 7, "invalid x-api-key"},
		{"unknown flag", nil, []string{"--bogus", "hi"}, 2, "--bogus"},
		{"bad mode", nil, []string{"--mode", "fast", "hi"}, 2, "plan or build"},
		{"empty prompt", nil, []string{"  "}, 2, "empty"},
		{"missing folder", nil, []string{"--cwd", "/nonexistent/garuda", "hi"}, 3, "/nonexistent/garuda"},
		{"zero steps", nil, []string{"--max-steps", "0", "hi"}, 2, "--max-steps must be at least 1"},
		{"empty cwd", nil, []string{"--cwd", "", "hi"}, 2, "--cwd is empty"},
		{"steps not a number", nil, []string{"--max-steps", "many", "hi"}, 2, `--max-steps "many": give a whole number`},
		{"flag without its value", nil, []string{"hi", "--cwd"}, 2, "--cwd needs a value"},
		{"bad boolean", nil, []string{"--quiet=maybe", "hi"}, 2, `--quiet "maybe": give true or false`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newRunEnv(t, c.turns...)
			code, stdout, stderr := e.run(c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q\nstdout:\n%s\nstderr:\n%s", code, c.code, c.want, stdout, stderr)
			}
			if strings.Contains(stderr, "rpc error") || strings.Contains(stderr, "garuda: exit") {
				t.Errorf("stderr carries a wrapper:\n%s", stderr)
			}
		})
	}
	// With --json a CI job reads stdout only: an error before the run starts is an error event there too, and
	// stdout holds nothing but JSON lines (they went to stderr alone).
	for _, c := range cases {
		if c.turns != nil {
			continue
		}
		t.Run("json "+c.name, func(t *testing.T) {
			e := newRunEnv(t)
			code, stdout, stderr := e.run(append([]string{"--json"}, c.args...)...)
			evs := events(t, stdout)
			errs := ofType(evs, "error")
			if code != c.code || len(errs) != 1 || !strings.Contains(errs[0]["message"].(string), c.want) {
				t.Fatalf("exit %d (want %d), error events %v\nstdout:\n%s\nstderr:\n%s", code, c.code, errs, stdout, stderr)
			}
			// Every run ends with its stop event, this one too: a CI job may wait for it.
			if last := evs[len(evs)-1]; last["type"] != "stop" || last["exitCode"] != float64(c.code) {
				t.Errorf("the last event is not the stop with exit code %d: %v", c.code, last)
			}
		})
	}
	t.Run("no model", func(t *testing.T) {
		e := newRunEnv(t)
		os.Remove(filepath.Join(e.home, "models.json"))
		code, _, stderr := e.run("hi")
		if code != 3 || !strings.Contains(stderr, "garuda setup") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})
	t.Run("prompt of 1 MB", func(t *testing.T) {
		e := newRunEnv(t)
		cmd := e.command()
		cmd.Stdin = strings.NewReader(strings.Repeat("a", 1<<20))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "name it in the prompt") {
			t.Fatalf("%v\n%s", err, &stderr)
		}
		if len(e.provider.Requests()) != 0 {
			t.Error("the model was asked")
		}
	})
	t.Run("a terminal on stdin and no prompt", func(t *testing.T) {
		e := newRunEnv(t)
		ptmx, ptsPath := openPty(t)
		defer ptmx.Close()
		pts, err := os.OpenFile(ptsPath, os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer pts.Close()
		cmd := e.command()
		cmd.Stdin = pts
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "no prompt") {
			t.Fatalf("%v\n%s", err, &stderr)
		}
	})
	t.Run("help", func(t *testing.T) {
		e := newRunEnv(t)
		code, stdout, _ := e.run("--help")
		if code != 0 || !strings.Contains(stdout, "exit status") || !strings.Contains(stdout, "--allow-edits") {
			t.Fatalf("exit %d, stdout:\n%s", code, stdout)
		}
	})
	t.Run("prompt on stdin", func(t *testing.T) {
		e := newRunEnv(t, fakeprovider.Turn{Text: "read from stdin"})
		cmd := e.command()
		cmd.Stdin = strings.NewReader("what is here?\n")
		out, err := cmd.Output()
		if err != nil || string(out) != "read from stdin\n" {
			t.Fatalf("%v: %q", err, out)
		}
		if !e.provider.LastBodyContains("what is here?") {
			t.Error("the prompt from stdin never reached the model")
		}
	})
}

// openPty returns a pseudo-terminal's controller and the path of its other end.
func openPty(t *testing.T) (*os.File, string) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), "ptmx"), fmt.Sprintf("/dev/pts/%d", n)
}

// The question is asked on the terminal (a pty that is the run's controlling terminal) while stdout is a pipe;
// the answer typed there decides. Answering "Deny" is the control: the file stays unwritten.
func TestRunAsksOnTheTerminal(t *testing.T) {
	for _, answer := range []string{"1", "3"} {
		t.Run("answer "+answer, func(t *testing.T) {
			e := newRunEnv(t, writeTurns("typed yes\n")...)
			ptmx, ptsPath := openPty(t)
			defer ptmx.Close()
			pts, err := os.OpenFile(ptsPath, os.O_RDWR|unix.O_NOCTTY, 0)
			if err != nil {
				t.Fatal(err)
			}
			cmd := e.command("write a.txt")
			cmd.Stdin = pts
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pts.Close()
			seen := make(chan string, 1)
			go func() {
				r := bufio.NewReader(ptmx)
				var got strings.Builder
				for {
					b, err := r.ReadByte()
					if err != nil {
						seen <- got.String()
						return
					}
					got.WriteByte(b)
					if strings.HasSuffix(got.String(), "> ") {
						seen <- got.String()
						io.Copy(io.Discard, r)
						return
					}
				}
			}()
			select {
			case q := <-seen:
				if !strings.Contains(q, "? Write") || !strings.Contains(q, "+ typed yes") || !strings.Contains(q, "[1] Allow once") {
					t.Errorf("the question on the terminal:\n%s", q)
				}
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("no question on the terminal\nstderr:\n%s", &stderr)
			}
			ptmx.Write([]byte(answer + "\n"))
			err = cmd.Wait()
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, &stderr)
			}
			got, rerr := os.ReadFile(filepath.Join(e.root, "a.txt"))
			if answer == "1" && (rerr != nil || string(got) != "typed yes\n") || answer == "3" && rerr == nil {
				t.Fatalf("answer %s: file %q %v\nstderr:\n%s", answer, got, rerr, &stderr)
			}
		})
	}
}

// survivorsOf lists the live processes whose command line holds m, but garuda run itself.
func survivorsOf(m string) []string {
	var found []string
	for _, p := range testproc.Live(m) {
		if !strings.Contains(p.Cmdline, "garuda run") {
			found = append(found, p.String())
		}
	}
	return found
}

// Ctrl-C during a command cancels the turn (exit 130), a second Ctrl-C at once stops at once (130), and closing
// stdout does the same (141): nothing is left running either way. A stop that Ctrl-C made still ends --json's
// events with the stop event (the session to resume, what changed), which a CI job reads.
func TestRunInterrupted(t *testing.T) {
	for _, how := range []string{"sigint", "sigint-twice", "sighup", "closed-stdout"} {
		t.Run(how, func(t *testing.T) {
			marker := fmt.Sprintf("garuda-run-%s-%d", how, time.Now().UnixNano())
			// The command ignores SIGTERM: the first Ctrl-C's cancel waits out its grace, the second does not.
			in, _ := json.Marshal(map[string]string{"command": "trap '' TERM; (exec -a " + marker + " sleep 60); exec -a " +
				marker + " sleep 61"})
			e := newRunEnv(t, fakeprovider.Turn{Text: "Sleeping.", ToolCalls: []fakeprovider.ToolCall{{ID: "s1", Name: "bash", Input: string(in)}}},
				fakeprovider.Turn{Text: "after"})
			cmd := e.command("--json", "sleep")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for len(survivorsOf(marker)) == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if len(survivorsOf(marker)) == 0 {
				cmd.Process.Kill()
				t.Fatalf("the command never started\nstderr:\n%s", &stderr)
			}
			want := 130
			var got bytes.Buffer
			copied := make(chan struct{})
			if how == "sighup" {
				// The terminal went away (an SSH connection dropped): a clean cancel, as for Ctrl-C.
				cmd.Process.Signal(syscall.SIGHUP)
				go func() { io.Copy(&got, stdout); close(copied) }()
			} else if how != "closed-stdout" {
				cmd.Process.Signal(syscall.SIGINT)
				if how == "sigint-twice" {
					time.Sleep(100 * time.Millisecond)
					cmd.Process.Signal(syscall.SIGINT)
				}
				go func() { io.Copy(&got, stdout); close(copied) }()
			} else {
				want = 141
				stdout.Close()
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("garuda run did not end\nstderr:\n%s", &stderr)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != want {
				t.Errorf("exit: %v, want %d\nstderr:\n%s", err, want, &stderr)
			}
			if s := survivorsOf(marker); len(s) > 0 {
				t.Errorf("left running: %v", s)
			}
			if how != "closed-stdout" {
				<-copied
				evs := events(t, got.String())
				if last := evs[len(evs)-1]; last["type"] != "stop" || last["exitCode"] != 130.0 || last["sessionId"] == "" {
					t.Errorf("the last event is not the stop: %v\nstdout:\n%s", last, &got)
				}
			}
		})
	}
}

// --allow-edits covers the project folder only: a write outside it stays a question, denied with no terminal. The
// control: --dangerously-allow-outside-sandbox lets the same write through. The broker says where the target is
// (Question.outside_root), whatever the title says.
func TestRunAllowEditsStopsAtTheProjectFolder(t *testing.T) {
	for _, flag := range []string{"--allow-edits", "--dangerously-allow-outside-sandbox"} {
		t.Run(flag, func(t *testing.T) {
			outside := filepath.Join(t.TempDir(), "outside.txt")
			in, _ := json.Marshal(map[string]string{"path": outside, "content": "x\n"})
			qs := questionsOfOneCall(t, fakeprovider.ToolCall{ID: "w1", Name: "write_file", Input: string(in)}, flag, "write outside")
			_, err := os.Stat(outside)
			if len(qs) == 0 || qs[0]["outsideRoot"] != true {
				t.Fatalf("questions: %v", qs)
			}
			if flag == "--allow-edits" && (err == nil || qs[0]["answer"] != "deny") {
				t.Fatalf("--allow-edits wrote outside the project folder: %v", qs)
			}
			if flag != "--allow-edits" && err != nil {
				t.Fatalf("control: %s did not allow the write: %v %v", flag, qs, err)
			}
		})
	}
}

// --allow-edits does not answer a write of a protected path: a git hook, an editor's task, an .envrc run later, as
// the user, so only a person allows one (found by the daily-use pass: with the flag, a run wrote
// .git/hooks/post-checkout). The broker says the target is protected (Question.protected), whatever the title says.
// The control: an ordinary file beside it is written under the same flag.
func TestRunAllowEditsLeavesProtectedPathsToAPerson(t *testing.T) {
	for _, c := range []struct {
		path      string
		protected bool
	}{{".git/hooks/post-checkout", true}, {".vscode/tasks.json", true}, {".envrc", true}, {"src/notes.txt", false}} {
		t.Run(c.path, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"path": c.path, "content": "touch /tmp/pwned\n"})
			e := newRunEnv(t, fakeprovider.Turn{ToolCalls: []fakeprovider.ToolCall{{ID: "w1", Name: "write_file", Input: string(in)}}},
				fakeprovider.Turn{Text: "ok"})
			if err := os.MkdirAll(filepath.Join(e.root, ".git", "hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := e.run("--json", "--allow-edits", "write it")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			qs := ofType(events(t, stdout), "question")
			_, err := os.Stat(filepath.Join(e.root, c.path))
			if len(qs) != 1 || (qs[0]["protected"] == true) != c.protected {
				t.Fatalf("questions: %v", qs)
			}
			if c.protected && (err == nil || qs[0]["answer"] != "deny" || !strings.Contains(qs[0]["by"].(string), "no flag allows it")) {
				t.Fatalf("--allow-edits wrote the protected %s: %v %v", c.path, qs, err)
			}
			if !c.protected && (err != nil || qs[0]["answer"] != "once") {
				t.Fatalf("control: --allow-edits did not write %s: %v %v", c.path, qs, err)
			}
		})
	}
}

// garuda undo, run in a project folder, undoes the newest change of that project, never one of another project
// that changed later (it did: the newest session with changes anywhere, found by the daily-use pass). The controls:
// --session still reaches the other project's session, and a folder no session changed is told so.
func TestUndoStaysInTheProjectFolder(t *testing.T) {
	write := func(name string) []fakeprovider.Turn {
		in, _ := json.Marshal(map[string]string{"path": name, "content": "new\n"})
		return []fakeprovider.Turn{{ToolCalls: []fakeprovider.ToolCall{{ID: "w-" + name, Name: "write_file", Input: string(in)}}},
			{Text: "ok"}}
	}
	e := newRunEnv(t, append(write("a.txt"), write("b.txt")...)...)
	first, second := e.root, t.TempDir()
	if code, out, errOut := e.run("--allow-edits", "write a"); code != 0 {
		t.Fatalf("first run: %d\n%s\n%s", code, out, errOut)
	}
	e.root = second
	code, out, errOut := e.run("--json", "--allow-edits", "write b")
	if code != 0 {
		t.Fatalf("second run: %d\n%s\n%s", code, out, errOut)
	}
	var secondSession string
	for _, ev := range ofType(events(t, out), "session") {
		secondSession, _ = ev["sessionId"].(string)
	}
	undo := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(bins.garuda, append([]string{"undo"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + e.home, "HOME=" + e.home, "TMPDIR=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := undo(first); err != nil || !strings.Contains(out, "a.txt removed") {
		t.Fatalf("garuda undo in the first project: %v\n%s", err, out)
	}
	if exists(filepath.Join(first, "a.txt")) || !exists(filepath.Join(second, "b.txt")) {
		t.Fatalf("undo in the first project: a.txt %v, b.txt %v", exists(filepath.Join(first, "a.txt")),
			exists(filepath.Join(second, "b.txt")))
	}
	if out, err := undo(t.TempDir()); err == nil || !strings.Contains(out, "no session has changes to undo in") {
		t.Errorf("garuda undo in a folder no session changed: %v\n%s", err, out)
	}
	if secondSession == "" {
		t.Fatalf("no session event:\n%s", out)
	}
	if out, err := undo(first, "--session", secondSession); err != nil || !strings.Contains(out, "b.txt removed") {
		t.Errorf("garuda undo --session of the other project: %v\n%s", err, out)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// BenchmarkRunFirstByte is garuda run from its spawn to the first byte of the answer on stdout, against a fake
// provider that answers at once: all of it is what the run adds to the model's own latency (process start, the
// broker's spawn and handshake, session/new, the request). It reports the mean and, steadier on a shared machine,
// the median.
func BenchmarkRunFirstByte(b *testing.B) {
	if bins.err != nil {
		b.Fatal(bins.err)
	}
	home, root := b.TempDir(), b.TempDir()
	var times []time.Duration
	for b.Loop() {
		srv, err := fakeprovider.Serve("127.0.0.1:0", []fakeprovider.Turn{{Text: "first"}})
		if err != nil {
			b.Fatal(err)
		}
		models := fakeModels(srv.URL)
		os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600)
		cmd := exec.Command(bins.garuda, "run", "hi")
		cmd.Dir = root
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + home, "HOME=" + home, "LOCAL_API_KEY=k", "TMPDIR=" + home}
		out, _ := cmd.StdoutPipe()
		start := time.Now()
		if err := testproc.StartBelow(cmd); err != nil {
			b.Fatal(err)
		}
		one := make([]byte, 1)
		if _, err := io.ReadFull(out, one); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		io.Copy(io.Discard, out)
		cmd.Wait()
		srv.Close()
	}
	var total time.Duration
	for _, t := range times {
		total += t
	}
	slices.Sort(times)
	b.ReportMetric(float64(total.Microseconds())/1000/float64(len(times)), "ms-to-first-byte")
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

// --continue goes on with the newest session of the folder, and the model hears the earlier turn; --resume of an id
// that is not there is a setup error that says so.
func TestRunContinue(t *testing.T) {
	e := newRunEnv(t, fakeprovider.Turn{Text: "first answer"}, fakeprovider.Turn{Text: "second answer"})
	code, stdout, stderr := e.run("--json", "remember the word PELICAN")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	first := events(t, stdout)[0]["sessionId"]
	code, stdout, stderr = e.run("--json", "--continue", "what was the word?")
	if code != 0 {
		t.Fatalf("continue: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := events(t, stdout)[0]["sessionId"]; got != first {
		t.Errorf("--continue opened %v, want the earlier %v", got, first)
	}
	if !e.provider.LastBodyContains("PELICAN") || !e.provider.LastBodyContains("first answer") {
		t.Error("the continued turn did not send the earlier conversation")
	}
	code, _, stderr = e.run("--resume", "0123456789abcdef01234567", "hi")
	if code != 3 || !strings.Contains(stderr, "0123456789abcdef01234567") {
		t.Errorf("--resume of an unknown id: exit %d\n%s", code, stderr)
	}
}

// --allow-commands covers sandboxed commands only: a command the model asks to run outside the sandbox stays a
// question, denied with no terminal. The control: --dangerously-allow-outside-sandbox lets it run. The broker says
// which it is (Question.outside_sandbox); the title of both is the same "$ command".
func TestRunAllowCommandsStopsAtTheSandbox(t *testing.T) {
	for _, flag := range []string{"--allow-commands", "--dangerously-allow-outside-sandbox"} {
		t.Run(flag, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			in, _ := json.Marshal(map[string]any{"command": "touch " + marker, "sandbox": false})
			qs := questionsOfOneCall(t, fakeprovider.ToolCall{ID: "b1", Name: "bash", Input: string(in)}, flag, "run it outside")
			_, err := os.Stat(marker)
			if len(qs) != 1 || qs[0]["outsideSandbox"] != true || qs[0]["kind"] != "command" {
				t.Fatalf("questions: %v", qs)
			}
			if flag == "--allow-commands" && (err == nil || qs[0]["answer"] != "deny") {
				t.Fatalf("--allow-commands ran a command outside the sandbox: %v", qs)
			}
			if flag != "--allow-commands" && (err != nil || qs[0]["answer"] != "once") {
				t.Fatalf("control: %s did not let the command run: %v %v", flag, qs, err)
			}
		})
	}
}

// garuda run and garuda acp start their own broker (early, from the package initialisation) only when they are to
// use one: not with --broker or GARUDA_BROKER. It never gets the provider keys of their environment (the control:
// another variable reaches it). A broker that dies at start is named as the reason, whenever it dies.
func TestRunStartsItsBroker(t *testing.T) {
	needBins(t)
	dir := t.TempDir()
	data, err := os.ReadFile(bins.garuda)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "garuda"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "started")
	envFile := filepath.Join(dir, "env")
	script := "#!/bin/sh\necho started >> " + marker + "\nenv > " + envFile + "\necho 'garuda-exec: cannot start' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "garuda-exec"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	none := "unix://" + filepath.Join(dir, "none.sock")
	for _, c := range []struct {
		name    string
		args    []string
		env     string
		started bool
		want    string
	}{
		{"own broker", []string{"hi"}, "", true, "exited unexpectedly"},
		{"acp", nil, "", true, "exited unexpectedly"},
		{"--broker", []string{"--broker", none, "hi"}, "", false, "cannot reach the broker"},
		{"--broker=", []string{"hi", "--broker=" + none}, "", false, "cannot reach the broker"},
		{"GARUDA_BROKER", []string{"hi"}, "GARUDA_BROKER=" + none, false, "cannot reach the broker"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(marker)
			args, code := append([]string{"run"}, c.args...), 3
			if c.name == "acp" {
				args, code = []string{"acp"}, 1
			}
			cmd := exec.Command(filepath.Join(dir, "garuda"), args...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + t.TempDir(), "HOME=" + dir, "LOCAL_API_KEY=sk-secret",
				"GH_AUTH_TOKEN=gh-secret", "OTHER_SETTING=visible", c.env}
			if c.name == "acp" {
				// stdin stays open: garuda acp ends because its broker died, not because the editor left.
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				defer r.Close()
				w.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
				cmd.Stdin = r
			}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != code || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "peer disconnected") {
				t.Fatalf("%v\n%s", err, out)
			}
			if _, err := os.Stat(marker); (err == nil) != c.started {
				t.Errorf("garuda-exec started: %v, want %v\n%s", err == nil, c.started, out)
			}
			if env, err := os.ReadFile(envFile); c.started && (err != nil || strings.Contains(string(env), "secret") ||
				!strings.Contains(string(env), "OTHER_SETTING=visible")) {
				t.Errorf("the broker's environment (%v):\n%s", err, env)
			}
			os.Remove(envFile)
		})
	}
}
