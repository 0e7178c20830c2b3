// Package soakprof lets a soak see what its memory growth is made of. It is linked only into builds with the
// soakprof tag (`make soak` builds them), never into a shipped binary: every 5 s it appends the live heap (what the
// last GC found reachable, /gc/heap/live:bytes) to $SOAKPROF_DIR/<name>.heap, and every 20 s it writes a heap
// profile to $SOAKPROF_DIR/<name>-<n>.pprof, for `go tool pprof -base FIRST LAST`.
package soakprof

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// profiles is how many heap profiles one run writes: one every 20 s for 20 minutes.
const profiles = 60

// Start begins the samples of this process, if $SOAKPROF_DIR is set. The files are created at once: the front end
// confines itself (Landlock) soon after it starts.
func Start(name string) {
	dir := os.Getenv("SOAKPROF_DIR")
	if dir == "" {
		return
	}
	runtime.MemProfileRate = 4096 // fine enough to see a few bytes a call add up
	heap, err := os.Create(filepath.Join(dir, name+".heap"))
	if err != nil {
		return
	}
	var files []*os.File
	for n := range profiles {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%03d.pprof", name, n)))
		if err != nil {
			break
		}
		files = append(files, f)
	}
	go func() {
		start := time.Now()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for tick := 1; ; tick++ {
			time.Sleep(5 * time.Second)
			metrics.Read(live)
			fmt.Fprintf(heap, "%d %d\n", time.Since(start).Milliseconds(), live[0].Value.Uint64())
			if tick%4 == 0 && len(files) > 0 {
				_ = pprof.Lookup("heap").WriteTo(files[0], 0)
				files[0].Close()
				files = files[1:]
			}
		}
	}()
}
