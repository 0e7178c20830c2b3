package broker

import (
	"fmt"
	"io"
	"sync"
	"text/tabwriter"

	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// probe runs the sandbox's probe once per broker: what the kernel offers does not change while it runs.
var probe = sync.OnceValue(sandbox.Probe)

func probeSandbox() ([]*execv1.Feature, bool) {
	r := probe()
	out := make([]*execv1.Feature, 0, len(r.Features))
	for _, f := range r.Features {
		out = append(out, &execv1.Feature{Name: f.Name, Enforced: f.Enforced, Detail: f.Detail})
	}
	return out, len(r.Missing()) == 0
}

// sandboxNotices says, at each session's start, that commands run in a weaker sandbox or not at all.
func sandboxNotices(team *policy.Settings) []string {
	missing := probe().Missing()
	if len(missing) == 0 {
		return nil
	}
	if team.WeakerSandboxAllowed() {
		return []string{fmt.Sprintf("Garuda: team policy allows a weaker sandbox; commands run without: %v.", missing)}
	}
	return []string{fmt.Sprintf("Garuda: commands are refused on this machine, whose kernel lacks %v; run `garuda-exec doctor`.", missing)}
}

// doctor prints what the sandbox enforces on this machine.
func doctor(w io.Writer) error {
	r := probe()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "protection\tenforced\tdetail")
	for _, f := range r.Features {
		yes := "no"
		if f.Enforced {
			yes = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, yes, f.Detail)
	}
	tw.Flush()
	if m := r.Missing(); len(m) > 0 {
		fmt.Fprintf(w, "\nCommands are REFUSED here (fail closed): missing %v.\n", m)
		return fmt.Errorf("the sandbox is incomplete on this machine")
	}
	fmt.Fprintln(w, "\nCommands run in the full sandbox.")
	return nil
}
