package broker_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// A session that starts process after process keeps only the newest ended ones (their memory and files): the
// oldest are forgotten, the newest read.
func TestEndedProcessesAreBounded(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	sid := e.Open(c)
	var ids []string
	for i := range 20 {
		res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_START,
			Command: "echo run" + strconv.Itoa(i)})
		id := strings.TrimPrefix(strings.SplitN(res.GetContent(), "\n", 2)[0], "id: ")
		brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_WAIT, Id: id, TimeoutMs: 60_000})
		ids = append(ids, id)
	}
	list := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_LIST}).GetContent()
	if n := strings.Count(list, "exited with code 0"); n > 16 || n < 15 {
		t.Errorf("%d ended processes listed:\n%s", n, list)
	}
	if res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ,
		Id: ids[0]}); res.GetStatus() != execv1.Status_STATUS_FAILED {
		t.Errorf("the oldest is still kept: %s", res.GetContent())
	}
	if res := brokertest.Process(t, c, sid, &execv1.ProcessManager{Action: execv1.ProcessAction_PROCESS_ACTION_READ,
		Id: ids[19]}); !strings.Contains(res.GetContent(), "run19") {
		t.Errorf("the newest: %s", res.GetContent())
	}
}
