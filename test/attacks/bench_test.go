package attacks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// BenchmarkBrokerReadFile1MB is read_file of a 1 MB file through the broker over gRPC, decided and audited.
func BenchmarkBrokerReadFile1MB(b *testing.B) {
	e := newBenchEnv(b)
	c := e.client()
	sid := e.open(c)
	line := strings.Repeat("x", 99) + "\n"
	os.WriteFile(filepath.Join(e.root, "big.txt"), []byte(strings.Repeat(line, 10_000)), 0o644)
	op := &execv1.Start{Op: &execv1.Start_ReadFile{ReadFile: &execv1.ReadFile{Path: "big.txt", Limit: 10_000}}}
	b.ResetTimer()
	for b.Loop() {
		st, err := c.Call(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		op.SessionId = sid
		st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: op}})
		m, err := st.Recv()
		if err != nil || m.GetResult().GetStatus() != execv1.Status_STATUS_COMPLETED {
			b.Fatalf("%v %v", m, err)
		}
	}
}

// call runs one call of op in session sid and fails unless it completes; questions are answered "once".
func benchCall(b *testing.B, c execv1.ExecServiceClient, sid string, op *execv1.Start) {
	st, err := c.Call(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	op.SessionId = sid
	st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: op}})
	for {
		m, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		if q := m.GetQuestion(); q != nil {
			st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Answer{Answer: &execv1.Answer{QuestionId: q.QuestionId, Choice: execv1.Choice_CHOICE_ONCE}}})
			continue
		}
		if r := m.GetResult(); r != nil {
			if r.GetStatus() != execv1.Status_STATUS_COMPLETED {
				b.Fatalf("%v", r)
			}
			return
		}
	}
}

// BenchmarkBrokerEditFile is edit_file of a 100 KB file in the project through the broker: decided, previewed,
// asked (answered at once), snapshotted for undo, written and audited.
func BenchmarkBrokerEditFile(b *testing.B) {
	e := newBenchEnv(b)
	c := e.client()
	sid := e.open(c)
	os.WriteFile(filepath.Join(e.root, "a.go"), []byte(strings.Repeat("line of code\n", 8000)+"MARK-A\n"), 0o644)
	ops := []*execv1.Start{editOp("a.go", "MARK-A", "MARK-B", false), editOp("a.go", "MARK-B", "MARK-A", false)}
	i := 0
	for b.Loop() {
		benchCall(b, c, sid, ops[i%2])
		i++
	}
}

// BenchmarkBrokerGrep is grep over 2,000 files of the project through the broker, every file decided by the read
// policy before it is opened.
func BenchmarkBrokerGrep(b *testing.B) {
	e := newBenchEnv(b)
	c := e.client()
	sid := e.open(c)
	for i := range 2000 {
		p := filepath.Join(e.root, "pkg"+strconv.Itoa(i%40), "f"+strconv.Itoa(i)+".go")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(strings.Repeat("func Something() {}\n", 50)), 0o644)
	}
	op := &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "Needle", OutputMode: "files"}}}
	for b.Loop() {
		benchCall(b, c, sid, op)
	}
}
