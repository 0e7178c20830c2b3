package throttle

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// reports records what a Throttle reports, and signals each report on a channel.
type reports struct {
	mu  sync.Mutex
	got []string
	ch  chan struct{}
}

func newReports() *reports { return &reports{ch: make(chan struct{}, 100)} }

func (r *reports) report(b []byte) {
	r.mu.Lock()
	r.got = append(r.got, string(b))
	r.mu.Unlock()
	r.ch <- struct{}{}
}

func (r *reports) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func (r *reports) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no report; got %q", r.list())
	}
}

func equal(a, b []string) bool { return strings.Join(a, "|") == strings.Join(b, "|") }

// The first output is reported at once; more output waits for the interval; End reports what waits, at once.
func TestIntervalRespectedAndEndFlushes(t *testing.T) {
	for _, delta := range []bool{false, true} {
		r := newReports()
		th := New(r.report, Config{Every: time.Hour, Delta: delta})
		th.Add([]byte("a"))
		th.Add([]byte("b"))
		th.Add([]byte("c"))
		if got := r.list(); !equal(got, []string{"a"}) {
			t.Fatalf("delta=%v: reports before the interval %q, want only the first", delta, got)
		}
		th.End()
		want := []string{"a", "abc"} // the tail of all the output
		if delta {
			want = []string{"a", "bc"} // only what came since the last report
		}
		if got := r.list(); !equal(got, want) {
			t.Errorf("delta=%v: reports %q, want %q", delta, got, want)
		}
	}
}

// Output that waits is reported when the interval has passed, without more output to push it.
func TestWaitingOutputIsReportedAfterTheInterval(t *testing.T) {
	r := newReports()
	th := New(r.report, Config{Every: 20 * time.Millisecond})
	defer th.Stop()
	th.Add([]byte("a"))
	th.Add([]byte("b"))
	r.wait(t)
	r.wait(t)
	if got := r.list(); !equal(got, []string{"a", "ab"}) {
		t.Errorf("reports %q, want a then ab", got)
	}
}

// Nothing is reported once Stop has returned: neither output that waited for the interval nor output added later.
func TestNothingAfterStop(t *testing.T) {
	r := newReports()
	th := New(r.report, Config{Every: 10 * time.Millisecond})
	th.Add([]byte("a"))
	th.Add([]byte("b")) // waits for the timer
	th.Stop()
	th.Add([]byte("c"))
	th.End()
	time.Sleep(50 * time.Millisecond) // five intervals: the timer would have fired
	if got := r.list(); !equal(got, []string{"a"}) {
		t.Errorf("reports %q, want only the one before Stop", got)
	}
}

// With Background, Add never runs a report, even one that is due, so a slow receiver never holds up the output's
// reader; the reports still come, in order, and End sends the rest.
func TestBackgroundAddNeverWaitsForTheReceiver(t *testing.T) {
	release := make(chan struct{})
	r := newReports()
	th := New(func(b []byte) { <-release; r.report(b) }, Config{Every: time.Millisecond, Delta: true, Background: true})
	added := make(chan struct{})
	go func() {
		for _, s := range []string{"a", "b", "c"} {
			th.Add([]byte(s))
			time.Sleep(5 * time.Millisecond)
		}
		close(added)
	}()
	select {
	case <-added:
	case <-time.After(10 * time.Second):
		t.Fatal("Add waited for a report that the receiver did not take")
	}
	close(release)
	th.End()
	if got := strings.Join(r.list(), ""); got != "abc" {
		t.Errorf("reports add up to %q, want abc", got)
	}
}

// A report is the newest MaxTail bytes, cut at the start of a line when one starts near the cut.
func TestTailKept(t *testing.T) {
	r := newReports()
	th := New(r.report, Config{Every: time.Hour})
	var all bytes.Buffer
	for i := 0; all.Len() < 3*MaxTail; i++ {
		line := []byte(strings.Repeat("x", i%50) + "\n")
		all.Write(line)
		if i == 0 {
			th.Add(line) // the first report, at once
			continue
		}
		th.Add(line)
	}
	th.Add(bytes.Repeat([]byte("y"), 3*MaxTail)) // one chunk longer than the cap
	all.Write(bytes.Repeat([]byte("y"), 3*MaxTail))
	th.Add([]byte("\nend"))
	all.WriteString("\nend")
	th.End()
	got := r.list()
	last := got[len(got)-1]
	if len(last) > MaxTail || !strings.HasSuffix(all.String(), last) || !strings.HasSuffix(last, "y\nend") {
		t.Errorf("last report: %d bytes ending %q; want the newest bytes of all the output, at most %d", len(last),
			last[max(0, len(last)-20):], MaxTail)
	}
}

func TestAppendTailCuts(t *testing.T) {
	const max = 16
	for _, c := range []struct{ b, s, want string }{
		{"", "short", "short"},
		{"0123456789", "abcdefghij", "456789abcdefghij"},                  // the newest 16 bytes
		{"012345\n789", "abcdefghij", "789abcdefghij"},                    // a newline near the cut: the line starts it
		{"0123456789", "abcdefgh\nj", "456789abcdefgh\nj"},                // a newline, but not near the cut
		{"old", "01234567890123456789abcdefghijklmn", "89abcdefghijklmn"}, // one chunk longer than max
		{"é", "0123456789abcde", "0123456789abcde"},                       // not inside a UTF-8 sequence
		{"", strings.Repeat("\x80", 20), strings.Repeat("\x80", 13)},      // not UTF-8: at most 3 more bytes dropped
	} {
		got := string(appendTail([]byte(c.b), []byte(c.s), max))
		if got != c.want {
			t.Errorf("appendTail(%q, %q) = %q, want %q", c.b, c.s, got, c.want)
		}
		if len(got) > max {
			t.Errorf("appendTail(%q, %q) keeps %d bytes, over %d", c.b, c.s, len(got), max)
		}
	}
	if !utf8.ValidString(string(appendTail([]byte("ééééééééé"), []byte("é"), max))) {
		t.Error("a UTF-8 tail was cut inside a sequence")
	}
}
