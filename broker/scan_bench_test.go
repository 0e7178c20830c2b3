package broker

import (
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkProtectedScanGoSrc is the walk every command pays twice, over Go's own source tree (~15,000 files).
func BenchmarkProtectedScanGoSrc(b *testing.B) {
	root := filepath.Join(runtime.GOROOT(), "src")
	for b.Loop() {
		protectedScan(root)
	}
}
