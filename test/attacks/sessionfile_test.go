package attacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (second pass, as a compromised front end).
// HELD. Record writes only the session's own file in $GARUDA_HOME/sessions: hostile kinds and data, a symlink
// planted as the session file, another connection's session. Control: a good record is kept.
func TestRedTeamRecordStaysInSessions(t *testing.T) {
	e := brokertest.New(t)
	outside := filepath.Join(filepath.Dir(e.Root), "outside.jsonl")
	brokertest.MustWrite(t, outside, "")
	c, other := e.Client(), e.Client()
	sid, planted := e.Open(c), e.Open(c)
	os.MkdirAll(filepath.Join(e.Home, "sessions"), 0o700)
	os.Symlink(outside, filepath.Join(e.Home, "sessions", planted+".jsonl"))
	for _, r := range []*execv1.RecordRequest{
		{SessionId: planted, Kind: "prompt", Data: []byte(`"into the link"`)},
		{SessionId: sid, Kind: strings.Repeat("a", 33), Data: []byte(`1`)},
		{SessionId: sid, Kind: "Prompt", Data: []byte(`1`)},
		{SessionId: sid, Kind: "prompt", Data: []byte("1\x00")},
		{SessionId: sid + "/../" + planted, Kind: "prompt", Data: []byte(`1`)},
	} {
		if _, err := c.Record(brokertest.Ctx(t), r); err == nil {
			t.Errorf("Record %q %q accepted", r.SessionId, r.Kind)
		}
	}
	if _, err := other.Record(brokertest.Ctx(t),
		&execv1.RecordRequest{SessionId: sid, Kind: "prompt", Data: []byte(`"foreign"`)}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another connection recorded into the session: %v", err)
	}
	if got := brokertest.FileText(outside); got != "" {
		t.Errorf("a record was written through a planted symlink: %q", got)
	}
	if _, err := c.Record(brokertest.Ctx(t), &execv1.RecordRequest{SessionId: sid, Kind: "prompt", Data: []byte(`"hi"`)}); err != nil {
		t.Fatalf("control: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(e.Home, "sessions"))
	for _, ent := range ents {
		if n := ent.Name(); n != sid+".jsonl" && n != sid+".meta.json" && n != planted+".jsonl" {
			t.Errorf("Record made %s", n)
		}
	}
	if !strings.Contains(brokertest.FileText(filepath.Join(e.Home, "sessions", sid+".jsonl")), `"hi"`) ||
		strings.Contains(brokertest.FileText(filepath.Join(e.Home, "sessions", sid+".jsonl")), "foreign") {
		t.Fatalf("control: %s", brokertest.FileText(filepath.Join(e.Home, "sessions", sid+".jsonl")))
	}
}
