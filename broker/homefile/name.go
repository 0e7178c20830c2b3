package homefile

import "errors"

// ErrBadID is returned for an id ValidID refuses (one error for every package that checks one: the broker turns it
// into InvalidArgument).
var ErrBadID = errors.New("invalid session id")

// ValidID says whether id may name a file or folder of $GARUDA_HOME (a session id): 1 to 128 of [A-Za-z0-9_-].
// Defends against a hostile id naming another path ("../x", "/etc/passwd", NUL...). A loop, not a regexp: the
// regexp's {1,128} compiles to 128 states at every process start.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
