package attacks

import (
	"os"
	"path/filepath"
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
