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
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// markB is session B's data: it is in B's undo snapshot and B's command output, never on disk in a root.
const markB = "MARK-B-" + "q7v2k9"

// snapshot lists every file under dir except the folders skipped, with what would show a write.
func snapshot(t testing.TB, dir string, skip ...string) map[string]string {
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
		brokertest.Read("a.txt"), brokertest.Read("../outside/canary.txt"), brokertest.Read("/etc/passwd"),
		brokertest.Write("a.txt", "x"), brokertest.Write("../outside/new", "x"),
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

	h := newHostile(f)
	f.Fuzz(func(t *testing.T, startBytes []byte, who uint8) {
		var op execv1.Start
		if proto.Unmarshal(startBytes, &op) != nil {
			return
		}
		switch who % 4 {
		case 0, 1:
			op.SessionId = h.sidA
		case 2:
			op.SessionId = h.sidB // another connection's session
		}
		if b := op.GetBash(); b != nil {
			b.Unsandboxed = false
			b.TimeoutMs = min(max(b.TimeoutMs, 1), 3000)
		}
		was := snapshot(t, h.dir, h.e.Root, h.e.Home)
		cx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		st, err := h.a.Call(cx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: &op}}); err != nil {
			t.Fatal(err)
		}
		var replies strings.Builder
		for {
			m, err := st.Recv()
			if err != nil {
				if cx.Err() != nil {
					t.Fatalf("no answer to %v", prototext.Format(&op))
				}
				replies.WriteString(err.Error()) // a refusal: the status is the answer
				break
			}
			replies.WriteString(prototext.Format(m))
			if q := m.GetQuestion(); q != nil {
				brokertest.Answer(st, q.QuestionId, execv1.Choice_CHOICE_DENY)
				continue
			}
			if m.GetResult() != nil {
				break
			}
		}
		h.check(t, prototext.Format(&op), was, replies.String(), h.e.Root, h.e.Home)
	})
}

// FuzzUnaryRPC sends a fuzzed request to one of the broker's other RPCs (the selector picks which; the bytes are
// its request), from the hostile front end, with its own session, another connection's, or a made-up one. The
// same holds as for Call: the broker stays up, nothing outside the root and its home changes, no answer carries
// B's data. A session it opens is closed again (the broker bounds sessions per user).
func FuzzUnaryRPC(f *testing.F) {
	seeds := []proto.Message{
		&execv1.HelloRequest{}, &execv1.PrepareRequest{Model: "fake/x", EnvKeys: []string{"ANTHROPIC_API_KEY"}},
		&execv1.OpenSessionRequest{Root: "../b", Mode: execv1.Mode_MODE_PLAN}, &execv1.CloseSessionRequest{SessionId: "x"},
		&execv1.SetModeRequest{Mode: 7}, &execv1.RecordRequest{Kind: "prompt", Data: []byte(`{"text":"hi"}`)},
		&execv1.ListCommandsRequest{}, &execv1.SetupOptionsRequest{},
		&execv1.SetupRequest{Provider: "anthropic", Model: "../../x", ApiKey: "k\n"},
		&execv1.InspectTrustRequest{Dir: "../b"}, &execv1.PinTrustRequest{Dir: "/", Hash: "00"}, &execv1.UndoRequest{List: true},
		&execv1.VerifyAuditRequest{File: "../../../etc/passwd"},
	}
	for i, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b, uint8(0))
		f.Add(uint8(i), b, uint8(2))
	}
	h := newHostile(f)
	f.Fuzz(func(t *testing.T, which uint8, req []byte, who uint8) {
		sid := map[uint8]string{0: h.sidA, 1: h.sidA, 2: h.sidB}[who%4]
		if who%4 == 3 {
			sid = string(req[:min(len(req), 8)])
		}
		cx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := h.a
		var m proto.Message
		var call func() (proto.Message, error)
		switch which % 13 {
		case 0:
			r := &execv1.HelloRequest{}
			m, call = r, func() (proto.Message, error) { return c.Hello(cx, r) }
		case 1:
			r := &execv1.PrepareRequest{}
			m, call = r, func() (proto.Message, error) { return c.Prepare(cx, r) }
		case 2:
			r := &execv1.OpenSessionRequest{}
			m, call = r, func() (proto.Message, error) {
				res, err := c.OpenSession(cx, r)
				if err == nil {
					c.CloseSession(cx, &execv1.CloseSessionRequest{SessionId: res.SessionId})
				}
				return res, err
			}
		case 3:
			r := &execv1.CloseSessionRequest{}
			m, call = r, func() (proto.Message, error) {
				if r.SessionId == h.sidA {
					return nil, nil // A's own session stays open for the next inputs
				}
				return c.CloseSession(cx, r)
			}
		case 4:
			r := &execv1.SetModeRequest{}
			m, call = r, func() (proto.Message, error) { return c.SetMode(cx, r) }
		case 5:
			r := &execv1.RecordRequest{}
			m, call = r, func() (proto.Message, error) { return c.Record(cx, r) }
		case 6:
			r := &execv1.ListCommandsRequest{}
			m, call = r, func() (proto.Message, error) { return c.ListCommands(cx, r) }
		case 7:
			r := &execv1.SetupOptionsRequest{}
			m, call = r, func() (proto.Message, error) { return c.SetupOptions(cx, r) }
		case 8:
			r := &execv1.SetupRequest{}
			m, call = r, func() (proto.Message, error) { return c.Setup(cx, r) }
		case 9:
			r := &execv1.InspectTrustRequest{}
			m, call = r, func() (proto.Message, error) { return c.InspectTrust(cx, r) }
		case 10:
			r := &execv1.PinTrustRequest{}
			m, call = r, func() (proto.Message, error) { return c.PinTrust(cx, r) }
		case 11:
			r := &execv1.UndoRequest{}
			m, call = r, func() (proto.Message, error) { return c.Undo(cx, r) }
		default:
			r := &execv1.VerifyAuditRequest{}
			m, call = r, func() (proto.Message, error) { return c.VerifyAudit(cx, r) }
		}
		if proto.Unmarshal(req, m) != nil {
			return
		}
		// Every request that names a session names the one chosen above.
		if fd := m.ProtoReflect().Descriptor().Fields().ByName("session_id"); fd != nil {
			m.ProtoReflect().Set(fd, protoreflect.ValueOfString(sid))
		}
		// Undo takes any session id by design (docs/broker-api.md: the clients of a broker share its undo history,
		// so `garuda undo` can restore a change of the editor's session): it may restore B's file in B's root.
		skip := []string{h.e.Root, h.e.Home}
		if _, ok := m.(*execv1.UndoRequest); ok {
			skip = append(skip, filepath.Join(h.dir, "b"))
		}
		was := snapshot(t, h.dir, skip...)
		res, err := call()
		reply := fmt.Sprint(err)
		if res != nil && err == nil {
			reply = prototext.Format(res)
		}
		if cx.Err() != nil {
			t.Fatalf("no answer to %T %v", m, prototext.Format(m))
		}
		h.check(t, fmt.Sprintf("%T %v", m, prototext.Format(m)), was, reply, skip...)
	})
}

// hostile is a broker with two sessions on two connections: B's holds data (an undo snapshot, a command's output)
// that A, the hostile front end, must never be answered with.
type hostile struct {
	e          *brokertest.Env
	dir        string
	a          execv1.ExecServiceClient
	sidA, sidB string
}

func newHostile(f *testing.F) *hostile {
	dir := f.TempDir()
	e := brokertest.NewIn(f, dir, filepath.Join(dir, "a"), filepath.Join(dir, "home"))
	rootB, outside := filepath.Join(dir, "b"), filepath.Join(dir, "outside")
	for _, d := range []string{rootB, outside} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(e.Root, "a.txt"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "canary.txt"), []byte("canary\n"), 0o644)

	// Session B, on its own connection, leaves its data in the broker: an undo snapshot and a command's output.
	cb := e.Client()
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
				brokertest.Answer(st, q.QuestionId, execv1.Choice_CHOICE_ONCE)
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
	callB(brokertest.Write("notes.txt", markB+"\n"))
	callB(brokertest.Write("notes.txt", "nothing here\n"))
	callB(&execv1.Start{Op: &execv1.Start_Bash{Bash: &execv1.Bash{Command: "printf 'MARK-B-%s\\n' q7v2k9"}}})

	// Control: B's data is in the broker's keeping (GARUDA_HOME), so an answer that leaked it would be seen.
	held := false
	filepath.WalkDir(e.Home, func(p string, d fs.DirEntry, err error) error {
		if b, rerr := os.ReadFile(p); err == nil && rerr == nil && strings.Contains(string(b), markB) {
			held = true
		}
		return nil
	})
	if !held {
		f.Fatal("session B's data is nowhere in the broker's home: the leak check would be vacuous")
	}

	a := e.Client()
	return &hostile{e: e, dir: dir, a: a, sidA: e.Open(a), sidB: rb.SessionId}
}

// check is what every fuzzed request must leave true: the broker answers, no file outside the folders skipped (A's
// root, the broker's home) changed since was, and reply carries none of B's data.
func (h *hostile) check(t *testing.T, what string, was map[string]string, reply string, skip ...string) {
	t.Helper()
	if strings.Contains(reply, markB) {
		t.Fatalf("%s was answered with session B's data: %s", what, reply)
	}
	if now := snapshot(t, h.dir, skip...); !sameFiles(was, now) {
		t.Fatalf("%s changed files outside the root: %v -> %v", what, was, now)
	}
	if _, err := h.a.Hello(context.Background(), &execv1.HelloRequest{}); err != nil {
		t.Fatalf("the broker is gone after %s: %v", what, err)
	}
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

// TestSnapshotSeesAWriteOutside is the fuzz targets' negative control: a file written, changed or removed outside
// the root shows in the snapshot, and one in the root or the home does not.
func TestSnapshotSeesAWriteOutside(t *testing.T) {
	dir := t.TempDir()
	root, home, outside := filepath.Join(dir, "a"), filepath.Join(dir, "home"), filepath.Join(dir, "outside")
	for _, d := range []string{root, home, outside} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644)
	was := snapshot(t, dir, root, home)
	os.WriteFile(filepath.Join(root, "in-root"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(home, "in-home"), []byte("x"), 0o644)
	if !sameFiles(was, snapshot(t, dir, root, home)) {
		t.Fatal("a write in the root or the home counted as outside")
	}
	for _, write := range []func(){
		func() { os.WriteFile(filepath.Join(outside, "new"), []byte("x"), 0o644) },
		func() { os.WriteFile(filepath.Join(outside, "f"), []byte("xy"), 0o644) },
		func() { os.Remove(filepath.Join(outside, "f")) },
	} {
		was := snapshot(t, dir, root, home)
		write()
		if sameFiles(was, snapshot(t, dir, root, home)) {
			t.Fatal("a change outside the root went unseen")
		}
	}
}
