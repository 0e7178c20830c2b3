package broker

import (
	"testing"

	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/internal/testenv"
)

// BenchmarkKeepPendingBigProject is what keeping a run's scan before on disk adds to every sandboxed run, in the
// project of 20,000 files: the scan encoded, written, locked and renamed before the run, removed after it.
func BenchmarkKeepPendingBigProject(b *testing.B) {
	root, w := bigProjectWatch(b)
	s := &Service{cfg: Config{Home: b.TempDir()}}
	for b.Loop() {
		if err := s.writePending(root, w); err != nil {
			b.Fatal(err)
		}
		w.End()
	}
}

// BenchmarkPendingEncodeBigProject is the encoding alone (BenchmarkKeepPendingBigProject less the file's work).
func BenchmarkPendingEncodeBigProject(b *testing.B) {
	_, w := bigProjectWatch(b)
	data, _ := w.Pending()
	b.ReportMetric(float64(len(data)), "bytes")
	for b.Loop() {
		if _, err := w.Pending(); err != nil {
			b.Fatal(err)
		}
	}
}

// bigProjectWatch is a guard's watch of a run in a new project of 20,000 files (its scan before taken).
func bigProjectWatch(b *testing.B) (root string, w *guard.Watch) {
	root = b.TempDir()
	testenv.BigProject(b, root)
	g := guard.New(root, guard.Options{MaxEntries: 100000})
	b.Cleanup(g.Close)
	w, err := g.Begin()
	if err != nil {
		b.Fatal(err)
	}
	return root, w
}
