// Package throttle passes a command's output on as progress a few times a second at most, as its newest bytes: the
// one throttle of the broker (output streamed to the front end) and the front end (updates shown in the editor).
package throttle

import (
	"bytes"
	"sync"
	"time"
	"unicode/utf8"
)

// Every is the shortest time between two progress reports of one call, in the broker and in the front end.
const Every = 250 * time.Millisecond

// MaxTail bounds what one report carries: the newest bytes of the output (the call's result has all of it, as the
// broker bounds it). Editors show the tail of a command's output, so a burst's end matters more than its start.
const MaxTail = 8 << 10

// Config says how a Throttle reports.
type Config struct {
	// Every is the shortest time between two reports; zero means Every.
	Every time.Duration
	// Delta makes each report carry only the output since the last one (the broker's stream, which the front end
	// adds up). Without it each report is the tail of all the output so far (editors replace a tool call's content
	// with each update).
	Delta bool
	// Background keeps reports out of Add: a report that is due at once runs on the throttle's timer, so that Add
	// (a command's output reader) never waits for the receiver. Without it Add reports itself when one is due.
	Background bool
}

// Throttle passes output on to its report function at most once per interval, the first at once, and never after
// Stop or End returns. Reports never overlap and come in order.
type Throttle struct {
	report func([]byte)
	cfg    Config

	reportMu sync.Mutex // held while report runs; taken before mu

	mu    sync.Mutex
	tail  []byte // the newest MaxTail bytes: of all the output, or of what came since the last report (Delta)
	dirty bool   // output came since the last report
	last  time.Time
	timer *time.Timer
	done  bool
}

// New returns a Throttle that passes output on to report.
func New(report func([]byte), cfg Config) *Throttle {
	if cfg.Every <= 0 {
		cfg.Every = Every
	}
	return &Throttle{report: report, cfg: cfg}
}

// Add takes more output, and reports it if a report is due (from the timer instead with Background).
func (t *Throttle) Add(b []byte) {
	if len(b) == 0 {
		return
	}
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	t.tail = appendTail(t.tail, b, MaxTail)
	t.dirty = true
	wait := t.cfg.Every - time.Since(t.last)
	if wait > 0 || t.cfg.Background {
		if t.timer == nil {
			t.timer = time.AfterFunc(max(wait, 0), t.fromTimer)
		}
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.flush(false)
}

func (t *Throttle) fromTimer() { t.flush(true) }

// flush reports the output that came since the last report, if any.
func (t *Throttle) flush(timer bool) {
	t.reportMu.Lock()
	defer t.reportMu.Unlock()
	t.mu.Lock()
	if timer {
		t.timer = nil
	}
	if t.done || !t.dirty {
		t.mu.Unlock()
		return
	}
	b := t.take()
	t.mu.Unlock()
	t.report(b)
}

// take returns what to report and starts a new interval; t.mu is held.
func (t *Throttle) take() []byte {
	t.dirty = false
	t.last = time.Now()
	if t.cfg.Delta {
		b := t.tail
		t.tail = nil
		return b
	}
	return bytes.Clone(t.tail)
}

// Stop ends the throttle: output not yet reported is dropped, and once Stop returns no report runs any more.
func (t *Throttle) Stop() { t.end(false) }

// End reports the output not yet reported, at once, then ends the throttle as Stop does.
func (t *Throttle) End() { t.end(true) }

func (t *Throttle) end(flush bool) {
	t.reportMu.Lock()
	defer t.reportMu.Unlock()
	t.mu.Lock()
	var b []byte
	if flush && !t.done && t.dirty {
		b = t.take()
	}
	t.done = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.mu.Unlock()
	if b != nil {
		t.report(b)
	}
}

// appendTail appends s to b and keeps the newest max bytes, cut after a newline where one is near the cut, and not
// inside a UTF-8 sequence (output need not be UTF-8: at most utf8.UTFMax-1 more bytes are dropped for it).
func appendTail(b, s []byte, max int) []byte {
	if len(b)+len(s) <= max {
		return append(b, s...)
	}
	if len(s) >= max {
		b = append(b[:0], s[len(s)-max:]...)
	} else {
		b = append(append(b[:0], b[len(b)+len(s)-max:]...), s...)
	}
	cut := 0
	if i := bytes.IndexByte(b[:max/4], '\n'); i >= 0 {
		cut = i + 1
	}
	for n := 0; n < utf8.UTFMax-1 && cut < len(b) && !utf8.RuneStart(b[cut]); n++ {
		cut++
	}
	return append(b[:0], b[cut:]...)
}
