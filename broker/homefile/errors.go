package homefile

import "errors"

// ErrLocked is TryLock's answer for a file that another open file (of this process or another) holds locked.
var ErrLocked = errors.New("the file is locked by another process")
