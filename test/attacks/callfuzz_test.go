package attacks

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// markB is session B's data: it is in B's undo snapshot and B's command output, never on disk in a root.
const markB = "MARK-B-" + "q7v2k9"

// snapshot lists every file under dir except the folders skipped, with what would show a write.
func snapshot(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		if fi, err := os.Lstat(p); err == nil {
			out[p] = fmt.Sprint(fi.Mode(), fi.ModTime(), fi.Size())
		}
		return nil
	})
	return out
}

// FuzzCallStart is a hostile front end: it sends a fuzzed first Call message (any operation, any fields, its own
// session, another connection's session or a made-up one) to a real broker and answers every question with deny.
// The broker never crashes, never changes a file outside the session's root (GARUDA_HOME is the broker's own),
// and never answers with session B's data. Commands are forced into the sandbox: a fuzzed command is never run on
// this machine unconfined, even through a bug.
func FuzzCallStart(f *testing.F) {
	for _, s := range []*execv1.Start{
		read("a.txt"), read("../outside/canary.txt"), read("/etc/passwd"), write("a.txt", "x"), write("../outside/new", "x"),
		{Op: &execv1.Start_EditFile{EditFile: &execv1.EditFile{Path: "a.txt", OldString: "hello", NewString: "bye", ReplaceAll: true}}},
		{Op: &execv1.Start_Glob{Glob: &execv1.Glob{Pattern: "**/*", Path: ".."}}},
		{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "MARK", Path: "/", Glob: "*", Context: 3, OutputMode: "content"}}},
		{Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: "echo hi > ../outside/x; cat ../b/notes.txt", TimeoutMs: 2000}}},
		{Op: &execv1.Start_ResolveCommand{ResolveCommand: &execv1.ResolveCommand{Text: "/hello world"}}},
		{Op: &execv1.Start_AttachMention{AttachMention: &execv1.AttachMention{Path: "../b/notes.txt"}}},
		{Op: &execv1.Start_LoadSkill{LoadSkill: &execv1.LoadSkill{Name: "../../x"}}},
		{},
	} {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
		f.Add(b, uint8(1))
	}

	dir := f.TempDir()
	e := newEnvIn(f, dir, filepath.Join(dir, "a"), filepath.Join(dir, "home"))
	rootB, outside := filepath.Join(dir, "b"), filepath.Join(dir, "outside")
	for _, d := range []string{rootB, outside} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(e.root, "a.txt"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "canary.txt"), []byte("canary\n"), 0o644)

	// Session B, on its own connection, leaves its data in the broker: an undo snapshot and a command's output.
	cb := e.client()
	rb, err := cb.OpenSession(context.Background(), &execv1.OpenSessionRequest{Root: rootB, Mode: execv1.Mode_MODE_BUILD})
	if err != nil {
		f.Fatal(err)
	}
	callB := func(op *execv1.Start) {
		cx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := cb.Call(cx)
		if err != nil {
			f.Fatal(err)
		}
		op.SessionId, op.CallId = rb.SessionId, "b"
		st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: op}})
		for {
			m, err := st.Recv()
			if err != nil {
				f.Fatalf("session B: %v", err)
			}
			if q := m.GetQuestion(); q != nil {
				answer(st, q.QuestionId, execv1.Choice_CHOICE_ONCE)
				continue
			}
			if r := m.GetResult(); r != nil {
				if r.Status != execv1.Status_STATUS_COMPLETED {
					f.Fatalf("session B: %v", r)
				}
				return
			}
		}
	}
	callB(write("notes.txt", markB+"\n"))
	callB(write("notes.txt", "nothing here\n"))
	callB(&execv1.Start{Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: "printf 'MARK-B-%s\\n' q7v2k9"}}})

	// Control: B's data is in the broker's keeping (GARUDA_HOME), so an answer that leaked it would be seen.
	held := false
	filepath.WalkDir(e.home, func(p string, d fs.DirEntry, err error) error {
		if b, rerr := os.ReadFile(p); err == nil && rerr == nil && strings.Contains(string(b), markB) {
			held = true
		}
		return nil
	})
	if !held {
		f.Fatal("session B's data is nowhere in the broker's home: the leak check would be vacuous")
	}

	ca := e.client()
	sidA := e.open(ca)
	f.Fuzz(func(t *testing.T, startBytes []byte, who uint8) {
		var op execv1.Start
		if proto.Unmarshal(startBytes, &op) != nil {
			return
		}
		switch who % 4 {
		case 0, 1:
			op.SessionId = sidA
		case 2:
			op.SessionId = rb.SessionId // another connection's session
		}
		if b := op.GetBash(); b != nil {
			b.Unsandboxed = false
			b.TimeoutMs = min(max(b.TimeoutMs, 1), 3000)
		}
		was := snapshot(t, dir, e.root, e.home)
		cx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		st, err := ca.Call(cx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: &op}}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := st.Recv()
			if err != nil {
				if cx.Err() != nil {
					t.Fatalf("no answer to %v", prototext.Format(&op))
				}
				break // a refusal: the status is the answer
			}
			if text := prototext.Format(m); strings.Contains(text, markB) {
				t.Fatalf("%v was answered with session B's data: %s", prototext.Format(&op), text)
			}
			if q := m.GetQuestion(); q != nil {
				answer(st, q.QuestionId, execv1.Choice_CHOICE_DENY)
				continue
			}
			if m.GetResult() != nil {
				break
			}
		}
		if now := snapshot(t, dir, e.root, e.home); !sameFiles(was, now) {
			t.Fatalf("%v changed files outside the root: %v -> %v", prototext.Format(&op), was, now)
		}
		if _, err := ca.Hello(context.Background(), &execv1.HelloRequest{}); err != nil {
			t.Fatalf("the broker is gone after %v: %v", prototext.Format(&op), err)
		}
	})
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
