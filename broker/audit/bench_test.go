package audit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// benchDir is where the benchmarks write: GARUDA_BENCH_DIR when set (to measure a given disk), else a temp folder.
func benchDir(b *testing.B) string {
	if d := os.Getenv("GARUDA_BENCH_DIR"); d != "" {
		d, err := os.MkdirTemp(d, "auditbench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return b.TempDir()
}

func benchRecord() Record {
	code := 0
	return Record{Session: "01JF3Q4Z8Y6W", Event: EventExecution, Op: "bash", Input: "go test ./broker/...",
		Verdict: "allow", Rule: "mode:build/sandboxed", Status: "completed", ExitCode: &code, DurationMS: 812}
}

// timed runs op b.N times and reports the median and 99th percentile of one op in microseconds.
func timed(b *testing.B, op func() error) {
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50_us")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99_us")
}

// BenchmarkCommit is one audit record appended and fsynced (flock, tail re-read, hash, write, fsync).
func BenchmarkCommit(b *testing.B) {
	l, err := Open(benchDir(b), Options{Broker: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	timed(b, func() error { return l.Commit(benchRecord()) })
}

// BenchmarkFsyncOnly is the floor for BenchmarkCommit: a line of the same size appended and fsynced, nothing else.
func BenchmarkFsyncOnly(b *testing.B) {
	r := benchRecord()
	r.Time, r.Prev = time.Now().UTC(), string(make([]byte, 64))
	line, _ := seal(&r)
	f, err := os.OpenFile(filepath.Join(benchDir(b), "fsync.jsonl"), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	timed(b, func() error {
		if _, err := f.Write(line); err != nil {
			return err
		}
		return f.Sync()
	})
}

// BenchmarkNote is a read's record: appended at once, fsynced later in a group.
func BenchmarkNote(b *testing.B) {
	l, err := Open(benchDir(b), Options{Broker: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	timed(b, func() error { return l.Note(benchRecord()) })
}

// BenchmarkSeal is the record's own cost: canonical JSON and sha256.
func BenchmarkSeal(b *testing.B) {
	r := benchRecord()
	timed(b, func() error {
		_, err := seal(&r)
		return err
	})
}
