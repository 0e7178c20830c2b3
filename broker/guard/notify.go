package guard

// notifier tells the walk which folders' entries changed since it last asked.
type notifier interface {
	reset()                                         // forget every watch
	watch(abs string, content bool) int32           // watch a folder's entries (and files); -1 when not watched
	unwatch(wd int32)                               //
	poison()                                        // answers can no longer be trusted: every refresh walks whole
	changed() (dirty, gone map[int32]bool, ok bool) // since the last call; ok false: walk whole
	changes() <-chan struct{}                       // closed at the next change; nil: no change is told
	close()
}

// noWatch is the notifier of a walk taken once (Watch.Check's of a hidden folder a run made): it watches nothing.
type noWatch struct{}

func (noWatch) reset()                                         {}
func (noWatch) watch(string, bool) int32                       { return -1 }
func (noWatch) unwatch(int32)                                  {}
func (noWatch) poison()                                        {}
func (noWatch) changed() (dirty, gone map[int32]bool, ok bool) { return nil, nil, false }
func (noWatch) changes() <-chan struct{}                       { return nil }
func (noWatch) close()                                         {}
