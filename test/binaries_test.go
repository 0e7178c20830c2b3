package test

import (
	"debug/elf"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garuda-dev/garuda/test/release"
)

// The shipped binaries are static and leave out grpc's tracing (test/release): no dynamic loader, no libc mapped
// in any process, and no html/template, whose reflection would keep every exported method linked. garuda-sandbox
// has no grpc at all (TestSandboxHelperDeps says why).
func TestShippedBinariesAreStaticAndLean(t *testing.T) {
	needBins(t)
	for _, bin := range []string{bins.garuda, bins.exec, bins.sandbox} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a dynamic loader (PT_INTERP): built with cgo", filepath.Base(bin))
			}
		}
		syms, err := f.Symbols()
		if err != nil {
			t.Fatal(err)
		}
		var linked bool
		var unwanted string
		for _, s := range syms {
			if strings.HasPrefix(s.Name, "golang.org/x/net/trace.") || strings.HasPrefix(s.Name, "html/template.") {
				unwanted = s.Name
			}
			linked = linked || strings.HasPrefix(s.Name, "google.golang.org/grpc.")
		}
		if unwanted != "" {
			t.Errorf("%s links %s: built without -tags %s", filepath.Base(bin), unwanted, release.Tags)
		}
		if bin == bins.sandbox && linked {
			t.Errorf("%s links grpc", filepath.Base(bin))
		}
		if bin != bins.sandbox && !linked {
			t.Errorf("%s has no grpc symbols: the check above looked at nothing", filepath.Base(bin))
		}
	}
}
