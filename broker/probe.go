package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/internal/featuretable"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// probe is what the sandbox enforces on this machine, found once per broker. The probe starts helper processes
// (about 10 ms), so its answer is kept for the boot in the user's private temp folder, keyed by the boot, the
// broker binary and its helper. It only informs (Hello, notices): every command is confined by Run itself, which fails closed
// whatever a cached report says. `garuda-exec doctor` always probes afresh.
var probe = sync.OnceValue(func() sandbox.Report {
	key := probeKey()
	path := filepath.Join(workBase(), "probe.json")
	if key != "" {
		if r, ok := cachedProbe(path, key); ok {
			return r
		}
	}
	r := sandbox.Probe()
	if key != "" {
		if data, err := json.Marshal(probeCache{Key: key, Report: r}); err == nil && os.MkdirAll(workBase(), 0o700) == nil {
			homefile.WriteAtomic(path, data, 0o600)
		}
	}
	return r
})

type probeCache struct {
	Key    string
	Report sandbox.Report
}

// probeKey names this boot, this user, this broker binary and its sandbox helper; "" when any of them cannot be told.
func probeKey() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s|%d|%s|%d|%d|%s", bytes.TrimSpace(boot), os.Getuid(), exe, fi.Size(), fi.ModTime().UnixNano(),
		sandbox.HelperID())
}

// cachedProbe reads a cached report from the user's private folder (checked like the session folders).
func cachedProbe(path, key string) (sandbox.Report, bool) {
	if fi, err := os.Lstat(workBase()); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return sandbox.Report{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return sandbox.Report{}, false
	}
	var c probeCache
	if json.Unmarshal(data, &c) != nil || c.Key != key || len(c.Report.Features) == 0 {
		return sandbox.Report{}, false
	}
	return c.Report, true
}

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
	for _, f := range probe().Features {
		if f.Name == sandbox.HelperFeature && !f.Enforced { // not the kernel's: no weaker sandbox runs without it
			return []string{"Garuda: commands are refused: " + f.Detail + "."}
		}
	}
	if team.WeakerSandboxAllowed() {
		return []string{fmt.Sprintf("Garuda: team policy allows a weaker sandbox; commands run without: %v.", missing)}
	}
	return []string{fmt.Sprintf("Garuda: commands are refused on this machine, whose kernel lacks %v; run `garuda-exec doctor`.", missing)}
}

// doctor prints what the sandbox enforces on this machine, probed afresh.
func doctor(w io.Writer) error {
	r := sandbox.Probe()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "protection\tenforced\tdetail")
	rows := make([]featuretable.Row, 0, len(r.Features))
	for _, f := range r.Features {
		rows = append(rows, featuretable.Row(f))
	}
	featuretable.Write(tw, rows)
	tw.Flush()
	networkDoctor(w, r)
	if m := r.Missing(); len(m) > 0 {
		fmt.Fprintf(w, "\nCommands are REFUSED here (fail closed): missing %v.\n", m)
		return fmt.Errorf("the sandbox is incomplete on this machine")
	}
	fmt.Fprintln(w, "\nCommands run in the full sandbox.")
	return nil
}

// networkDoctor says how sandboxed commands reach the network here: through the broker's proxy, which needs the
// command's own network namespace.
func networkDoctor(w io.Writer, r sandbox.Report) {
	netns := false
	for _, f := range r.Features {
		netns = netns || f.Name == "network namespace" && f.Enforced
	}
	fmt.Fprintln(w)
	if !netns {
		fmt.Fprintln(w, "Network proxy: off (no network namespace here): sandboxed commands have no network at all.")
		return
	}
	fmt.Fprintln(w, "Network proxy: on. Each sandboxed command gets its own HTTP(S) proxy in the broker, reached from the")
	fmt.Fprintln(w, "  command's 127.0.0.1 through a unix socket (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are set; CONNECT is")
	fmt.Fprintln(w, "  tunnelled, TLS is not intercepted). Each host is decided by the network policy: network(domain:...) rules,")
	fmt.Fprintln(w, "  team policy's network_allowlist, a question otherwise; loopback, private and metadata addresses only")
	fmt.Fprintln(w, "  for a rule naming the exact host. Raw TCP, UDP and DNS out stay impossible.")
	fmt.Fprintf(w, "  Package registries allowed by default (\"package_registries\": false turns them off): %s.\n",
		strings.Join(policy.PackageRegistries, ", "))
}
