// A command's output: bounded in memory, saved whole, streamed.

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestHugeOutputBoundedMemory(t *testing.T) {
	f := newFixture(t)
	var peak atomic.Uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	stop := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	}()
	r := f.sandboxed("head -c 1000000000 /dev/zero | tr '\\0' 'a'; echo; echo THE-END")
	close(stop)
	if !r.Truncated || len(r.Output) > KeepOutput+200 || !bytes.HasSuffix(bytes.TrimSpace(r.Output), []byte("THE-END")) {
		t.Errorf("1 GB output: truncated %v, kept %d bytes, tail %q", r.Truncated, len(r.Output), r.Output[max(0, len(r.Output)-40):])
	}
	if !bytes.Contains(r.Output, []byte("bytes cut")) {
		t.Errorf("no cut note in %q", r.Output[KeepOutput/2-10:KeepOutput/2+80])
	}
	if grew := int64(peak.Load()) - int64(base); grew > 16<<20 {
		t.Errorf("heap grew by %d MB while reading 1 GB", grew>>20)
	}
	t.Logf("heap peak growth %d KB", (int64(peak.Load())-int64(base))>>10)
}

func TestOutputFileAndStreaming(t *testing.T) {
	f := newFixture(t)
	s := f.spec("seq 1 20000")
	s.OutputFile = filepath.Join(t.TempDir(), "out.txt")
	var streamed bytes.Buffer
	s.OnOutput = func(b []byte) { streamed.Write(b) }
	r := f.run(s)
	full, err := os.ReadFile(s.OutputFile)
	must(t, err)
	want, _ := exec.Command("seq", "1", "20000").Output()
	if !bytes.Equal(full, want) || !bytes.Equal(streamed.Bytes(), want) {
		t.Errorf("saved %d bytes, streamed %d, want %d", len(full), streamed.Len(), len(want))
	}
	if !r.Truncated || r.OutputPath != s.OutputFile || !bytes.Contains(r.Output, []byte("full output in "+s.OutputFile)) {
		t.Errorf("result: truncated %v path %q", r.Truncated, r.OutputPath)
	}
	if !bytes.HasPrefix(r.Output, []byte("1\n2\n")) || !bytes.HasSuffix(r.Output, []byte("19999\n20000\n")) {
		t.Errorf("head/tail wrong")
	}
	if fi, _ := os.Stat(s.OutputFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("output file mode %v", fi.Mode())
	}
}
