package broker_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// BenchmarkBrokerReadFile1MB is read_file of a 1 MB file through the broker over gRPC, decided and audited.
func BenchmarkBrokerReadFile1MB(b *testing.B) {
	e := brokertest.New(b)
	c := e.Client()
	sid := e.Open(c)
	line := strings.Repeat("x", 99) + "\n"
	os.WriteFile(filepath.Join(e.Root, "big.txt"), []byte(strings.Repeat(line, 10_000)), 0o644)
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

// benchCall runs one call of op in session sid and fails unless it completes; questions are answered "once".
func benchCall(b *testing.B, c execv1.ExecServiceClient, sid string, op *execv1.Start) {
	res, _, err := brokertest.Run(b, brokertest.Start(b, c, b.Context(), sid, op), execv1.Choice_CHOICE_ONCE)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_COMPLETED {
		b.Fatalf("%v %v", res, err)
	}
}

// BenchmarkBrokerEditFile is edit_file of a 100 KB file in the project through the broker: decided, previewed,
// asked (answered at once), snapshotted for undo, written and audited.
func BenchmarkBrokerEditFile(b *testing.B) {
	e := brokertest.New(b)
	c := e.Client()
	benchEditBackAndForth(b, e.Root, c, e.Open(c))
}

// benchEditBackAndForth writes a 100 KB a.go into root and times edit_file calls in session sid that turn its mark
// MARK-A into MARK-B and back, one call an iteration.
func benchEditBackAndForth(b *testing.B, root string, c execv1.ExecServiceClient, sid string) {
	os.WriteFile(filepath.Join(root, "a.go"), []byte(strings.Repeat("line of code\n", 8000)+"MARK-A\n"), 0o644)
	ops := []*execv1.Start{brokertest.EditOp("a.go", "MARK-A", "MARK-B", false), brokertest.EditOp("a.go", "MARK-B", "MARK-A", false)}
	i := 0
	for b.Loop() {
		benchCall(b, c, sid, ops[i%2])
		i++
	}
}

// BenchmarkBrokerGrep is grep over 2,000 files of the project through the broker, every file decided by the read
// policy before it is opened.
func BenchmarkBrokerGrep(b *testing.B) {
	e := brokertest.New(b)
	c := e.Client()
	sid := e.Open(c)
	for i := range 2000 {
		p := filepath.Join(e.Root, "pkg"+strconv.Itoa(i%40), "f"+strconv.Itoa(i)+".go")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(strings.Repeat("func Something() {}\n", 50)), 0o644)
	}
	op := &execv1.Start{Op: &execv1.Start_Grep{Grep: &execv1.Grep{Pattern: "Needle", OutputMode: "files"}}}
	for b.Loop() {
		benchCall(b, c, sid, op)
	}
}

// BenchmarkProcessRead1GB: a background process prints 1 GiB; the broker's heap stays bounded (heap-MB, measured
// after the flood) and each read of it returns at most its head and tail (read-bytes). Run with -benchtime=10x.
func BenchmarkProcessRead1GB(b *testing.B) {
	e := brokertest.New(b)
	c := e.Client()
	sid := e.Open(c)
	pm := func(p *execv1.ProcessManager) *execv1.Result {
		st, err := c.Call(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: &execv1.Start{SessionId: sid,
			Op: &execv1.Start_ProcessManager{ProcessManager: p}}}})
		for {
			m, err := st.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if r := m.GetResult(); r != nil {
				return r
			}
		}
	}
	res := pm(&execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START, Command: "head -c 1073741824 /dev/zero; echo end"})
	id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
	for {
		r := pm(&execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id, TimeoutMs: 600_000})
		if strings.Contains(r.GetContent(), "exited with code") {
			break
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := 0
	b.ResetTimer()
	for b.Loop() {
		r := pm(&execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ, Id: id})
		n = len(r.GetContent())
	}
	b.ReportMetric(float64(n), "read-bytes")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(float64(ms.TotalAlloc)/(1<<20), "alloc-MB")
}
