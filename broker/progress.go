// The progress pump: a command's output streamed to the front end a few times a second at most.

package broker

import (
	"sync"
	"time"

	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// progressEvery is how often command output is streamed to the front end at most.
const progressEvery = 250 * time.Millisecond

// progress streams command output to the front end a few times a second at most.
type progress struct {
	c    *call
	mu   sync.Mutex
	buf  []byte
	done chan struct{}
	wg   sync.WaitGroup
}

// maxProgressChunk bounds what one progress message carries; the rest of a burst is in the result and the file.
const maxProgressChunk = 16 << 10

func newProgress(c *call) *progress {
	p := &progress{c: c, done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.flush()
			case <-p.done:
				p.flush()
				return
			}
		}
	}()
	return p
}

// add keeps the newest maxProgressChunk bytes of what came since the last flush: the front end shows the tail of
// the output, so a burst's end matters more than its start.
func (p *progress) add(b []byte) {
	p.mu.Lock()
	if len(b) >= maxProgressChunk {
		p.buf = append(p.buf[:0], b[len(b)-maxProgressChunk:]...)
	} else {
		if over := len(p.buf) + len(b) - maxProgressChunk; over > 0 {
			p.buf = append(p.buf[:0], p.buf[over:]...)
		}
		p.buf = append(p.buf, b...)
	}
	p.mu.Unlock()
}

func (p *progress) flush() {
	p.mu.Lock()
	b := p.buf
	p.buf = nil
	p.mu.Unlock()
	if len(b) > 0 {
		p.c.progress(&execv1.Progress{Output: b})
	}
}

func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}
