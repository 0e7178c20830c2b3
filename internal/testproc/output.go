package testproc

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// Output holds what a process (or a logger's goroutines) writes while a test reads it: a bytes.Buffer behind a
// mutex. Its zero value is ready to use; it must not be copied once written.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// WaitFor polls until the output holds sub, for at most within; it reports whether it does.
func (o *Output) WaitFor(sub string, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(o.String(), sub) {
			return true
		}
	}
	return strings.Contains(o.String(), sub)
}
