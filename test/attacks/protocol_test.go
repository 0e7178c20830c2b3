package attacks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (first pass over the boundary).
// HELD. Hostile or malformed protocol messages are refused with InvalidArgument and change nothing; each has a
// legitimate control that is served.
func TestRedTeamProtocolOddities(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	code := func(err error) codes.Code { return status.Code(err) }

	// A Start with no operation.
	st := brokertest.Start(t, c, brokertest.Ctx(t), sid, &execv1.Start{})
	if _, err := brokertest.Next(t, st); code(err) != codes.InvalidArgument {
		t.Errorf("empty Start: %v", err)
	}
	// Two Starts: the second (a write) must not run.
	st = brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("first.txt", "1"))
	m, err := brokertest.Next(t, st)
	if err != nil || m.GetQuestion() == nil {
		t.Fatalf("want a question: %v %v", m, err)
	}
	second := brokertest.Write("second.txt", "2")
	second.SessionId = sid
	st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Start{Start: second}})
	brokertest.Answer(st, m.GetQuestion().QuestionId, execv1.Choice_CHOICE_ONCE)
	if _, err := brokertest.Next(t, st); code(err) != codes.InvalidArgument {
		t.Errorf("second Start: %v", err)
	}
	// CHOICE_UNSPECIFIED is a deny.
	res, _, err := brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("unspec.txt", "x")),
		execv1.Choice_CHOICE_UNSPECIFIED)
	if err != nil || res.GetStatus() != execv1.Status_STATUS_DENIED {
		t.Errorf("CHOICE_UNSPECIFIED: %v %v", res, err)
	}
	for _, f := range []string{"first.txt", "second.txt", "unspec.txt"} {
		if _, err := os.Stat(filepath.Join(e.Root, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	// Modes.
	if _, err := c.SetMode(brokertest.Ctx(t),
		&execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_UNSPECIFIED}); code(err) != codes.InvalidArgument {
		t.Errorf("SetMode unspecified: %v", err)
	}
	if _, err := c.SetMode(brokertest.Ctx(t),
		&execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode(99)}); code(err) != codes.InvalidArgument {
		t.Errorf("SetMode 99: %v", err)
	}
	// Records.
	for _, r := range []*execv1.RecordRequest{
		{SessionId: sid, Kind: "../../credentials", Data: []byte(`1`)},
		{SessionId: sid, Kind: "prompt\n", Data: []byte(`1`)},
		{SessionId: sid, Kind: "prompt", Data: []byte("{\"a\":1}\n{\"time\":\"forged\"}")},
		{SessionId: sid, Kind: "prompt", Data: []byte("not json")},
		{SessionId: "../" + sid, Kind: "prompt", Data: []byte(`1`)},
	} {
		if _, err := c.Record(brokertest.Ctx(t), r); code(err) != codes.InvalidArgument && code(err) != codes.NotFound {
			t.Errorf("Record %q %q: %v", r.Kind, r.Data, err)
		}
	}
	// Undo and VerifyAudit with path tricks.
	for _, id := range []string{"../audit", "../../etc", sid + "/../x", "/etc/passwd"} {
		if _, err := c.Undo(brokertest.Ctx(t), &execv1.UndoRequest{SessionId: id}); code(err) != codes.InvalidArgument {
			t.Errorf("Undo %q: %v", id, err)
		}
	}
	brokertest.MustWrite(t, filepath.Join(e.Home, "credentials"), `{"anthropic":"sk-verify-secret"}`)
	for _, f := range []string{e.Home + "/audit/../credentials", "../credentials", e.Home + "/credentials", "/etc/passwd"} {
		r, err := c.VerifyAudit(brokertest.Ctx(t), &execv1.VerifyAuditRequest{File: f})
		if code(err) != codes.InvalidArgument || strings.Contains(fmt.Sprint(r, err), "sk-verify") {
			t.Errorf("VerifyAudit %q: %v %v", f, r, err)
		}
	}
	// A message over gRPC's limit is refused without harm to the broker.
	big := brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Write("huge.txt", strings.Repeat("x", 64<<20)))
	if _, err := brokertest.Next(t, big); err == nil {
		t.Errorf("a 64 MiB message was accepted")
	}
	if _, err := os.Stat(filepath.Join(e.Root, "huge.txt")); err == nil {
		t.Errorf("huge.txt was written")
	}
	// Controls: a good record is kept, a mode change is taken, and verify checks the real log.
	if _, err := c.Record(brokertest.Ctx(t), &execv1.RecordRequest{SessionId: sid, Kind: "prompt", Data: []byte(`"hi"`)}); err != nil {
		t.Fatalf("control Record: %v", err)
	}
	if _, err := c.SetMode(brokertest.Ctx(t), &execv1.SetModeRequest{SessionId: sid, Mode: execv1.Mode_MODE_PLAN}); err != nil {
		t.Fatalf("control SetMode: %v", err)
	}
	if r, err := c.VerifyAudit(brokertest.Ctx(t), &execv1.VerifyAuditRequest{}); err != nil || len(r.Files) == 0 || !r.Files[0].Ok {
		t.Fatalf("control VerifyAudit: %v %v", r, err)
	}
}

// Found by red team (second pass, as a compromised front end).
// HELD. Messages in the wrong order and VerifyAudit spellings: an Answer as the first message, a Start for an
// unknown session, verify of the audit folder itself or a missing file in it. Control: verify of the real log.
func TestRedTeamWrongOrderAndVerifySpellings(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	st, err := c.Call(brokertest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&execv1.CallRequest{Msg: &execv1.CallRequest_Answer{Answer: &execv1.Answer{QuestionId: "x", Choice: execv1.Choice_CHOICE_ONCE}}})
	if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("an answer first: %v", err)
	}
	if _, err := brokertest.Next(t, brokertest.Start(t, c, brokertest.Ctx(t), "no-such-session",
		brokertest.Write("x.txt", "x"))); status.Code(err) != codes.NotFound {
		t.Errorf("unknown session: %v", err)
	}
	brokertest.Run(t, brokertest.Start(t, c, brokertest.Ctx(t), sid, brokertest.Read("nothing.txt")),
		execv1.Choice_CHOICE_DENY) // a record in the log
	dir := filepath.Join(e.Home, "audit")
	for _, f := range []string{dir, dir + "/", dir + "/.", dir + "/.."} {
		if _, err := c.VerifyAudit(brokertest.Ctx(t), &execv1.VerifyAuditRequest{File: f}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("VerifyAudit %q: %v", f, err)
		}
	}
	for _, f := range []string{dir + "/../audit/missing.jsonl", dir + "/x\x00.jsonl"} {
		if r, err := c.VerifyAudit(brokertest.Ctx(t), &execv1.VerifyAuditRequest{File: f}); err != nil || len(r.Files) != 1 || r.Files[0].Ok {
			t.Errorf("VerifyAudit of a missing file %q: %v %v", f, r, err)
		}
	}
	if r, err := c.VerifyAudit(brokertest.Ctx(t), &execv1.VerifyAuditRequest{}); err != nil || len(r.Files) == 0 || !r.Files[0].Ok {
		t.Fatalf("control: %v %v", r, err)
	}
	for _, f := range []string{"x.txt", "nothing.txt"} {
		if _, err := os.Stat(filepath.Join(e.Root, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}
