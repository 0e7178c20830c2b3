//go:build !linux

package guard

// noNotifier makes every scan walk the whole root.
type noNotifier struct{}

func newNotifier() notifier { return noNotifier{} }

func (noNotifier) reset()                                         {}
func (noNotifier) watch(string) int32                             { return -1 }
func (noNotifier) unwatch(int32)                                  {}
func (noNotifier) poison()                                        {}
func (noNotifier) changed() (dirty, gone map[int32]bool, ok bool) { return nil, nil, false }
func (noNotifier) close()                                         {}
