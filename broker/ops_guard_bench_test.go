package broker_test

import (
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/internal/testenv"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// BenchmarkBashTrueBigProject is a sandboxed `true` through Call on a project of 20,000 files in 1,000 folders,
// with a "**" read-deny rule, in a session's steady state: what every command pays around its run.
func BenchmarkBashTrueBigProject(b *testing.B) {
	benchBashTrue(b, `{"permissions":{"deny":["Read(**/.env)"]}}`)
}

// BenchmarkBashTrueBigProjectNoRules is the same without read-deny rules (the default).
func BenchmarkBashTrueBigProjectNoRules(b *testing.B) { benchBashTrue(b, "") }

func benchBashTrue(b *testing.B, settings string) {
	e := brokertest.New(b)
	testenv.BigProject(b, e.Root)
	if settings != "" {
		e.Settings(b, settings)
	}
	c := e.Client()
	sid := e.Open(c)
	if r := brokertest.Sh(b, c, sid, "true"); r.GetStatus() != execv1.Status_STATUS_COMPLETED {
		b.Fatalf("%v", r)
	}
	for b.Loop() {
		if r := brokertest.Sh(b, c, sid, "true"); r.GetStatus() != execv1.Status_STATUS_COMPLETED {
			b.Fatalf("%v", r)
		}
	}
}

// BenchmarkBrokerEditFileBigProject is BenchmarkBrokerEditFile in that project of 20,000 files, in a session's steady
// state: the edit is checked by the command guard like a command's run (a scan before, one after).
func BenchmarkBrokerEditFileBigProject(b *testing.B) {
	e := brokertest.New(b)
	testenv.BigProject(b, e.Root)
	c := e.Client()
	sid := e.Open(c)
	brokertest.Sh(b, c, sid, "true")
	benchEditBackAndForth(b, e.Root, c, sid)
}
