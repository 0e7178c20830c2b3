package sandbox

import (
	"testing"

	"github.com/garuda-dev/garuda/test/nobody"
)

// TestAsNobody reruns the attack and process tests as the unprivileged user nobody (uid 65534), where the sandbox
// uses a user namespace and RLIMIT_NPROC instead of staying in the host's and using a pids cgroup.
func TestAsNobody(t *testing.T) {
	nobody.Rerun(t, "^Test(Attack|Everyday|LocalServer|PlanMode|Cancel|CommandEnd|Shutdown|Timeout|BrokerKilled|ProcessLimit|"+
		"ForkBomb|RunEcho|Probe|HugeOutput|MemoryLimit|OOMScoreAdj|DataLimit|SignalState|SharedNetwork|Reveal|Helper|ResolveHelper)",
		"TestAttackWriteOutsideRoot", "TestEverydayGitFolderNotWritable", "TestHelperRefusesAnotherBuild", "TestResolveHelper")
}
