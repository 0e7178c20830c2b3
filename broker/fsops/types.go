package fsops

import "io/fs"

// Limits of the tools. They are variables of a Root (see Root.Limits) so that tests and the broker can set them.
type Limits struct {
	ReadLines    int   // default number of lines read_file returns (2000)
	LineChars    int   // a line longer than this many characters is cut (2000)
	ReadBytes    int   // cap of the text read_file returns (256 KiB)
	ScanBytes    int64 // read_file never reads past this many bytes of a file (128 MiB)
	EditBytes    int64 // largest file write_file/edit_file will load as the pre-image, or make (16 MiB)
	ListEntries  int   // cap of glob paths, grep lines/files (1000)
	ListBytes    int   // cap of the text of a glob/grep result (256 KiB)
	GrepLineChar int   // a grep result line longer than this is cut (500)
}

// defaultLimits are the limits of a Root returned by OpenRoot.
var defaultLimits = Limits{
	ReadLines:    2000,
	LineChars:    2000,
	ReadBytes:    256 << 10,
	ScanBytes:    128 << 20,
	EditBytes:    16 << 20,
	ListEntries:  1000,
	ListBytes:    256 << 10,
	GrepLineChar: 500,
}

// Location is a place the editor can follow: an absolute path, and the 1-based line when known (else 0).
type Location struct {
	Path string
	Line int
}

// ReadRequest is read_file's input. Offset is the 1-based first line (0 means 1); Limit the number of lines (0 means
// Limits.ReadLines). Outside must be set only after policy allowed reading a path outside the root; without it such
// a path fails with ErrEscapes.
//
// Recheck, when set, is called if the file opened is not the path asked (a symlink beneath the root was followed)
// with the file's real path under the root; false refuses the read with ErrDenied before a byte is read. Outside the
// root no symlink is followed at all.
type ReadRequest struct {
	Path    string
	Offset  int
	Limit   int
	Outside bool
	Recheck func(real string) bool
}

// ReadResult is read_file's output: Text holds lines numbered like `cat -n` ("%6d\t"), Note says what was cut and how
// to read on (empty when nothing was).
type ReadResult struct {
	Text      string
	Abs       string // the path asked, made absolute
	Real      string // the file read: Abs, or where a symlink beneath the root led
	FirstLine int    // number of the first line in Text
	Lines     int    // how many lines Text holds
	More      bool   // the file goes on after the last line shown
	Note      string
	Location  Location
}

// Pending is a prepared write: the exact bytes that will be written (New), the pre-image (Old, Existed, OldHash) to
// show in the question and to check at Commit. What was shown is what is written.
type Pending struct {
	Abs     string
	Old     []byte
	New     []byte
	Existed bool
	OldHash [32]byte
	Mode    fs.FileMode // permission bits kept (0644 for a new file)
	Matches int         // edit: how many occurrences were replaced (0 for a write)
	Hidden  bool        // New holds hidden or bidirectional characters (HasHidden): the question must warn

	root    *Root
	rel     string // path relative to the root, or "" when outside
	outside bool
	uid     int
	gid     int
}

// GrepRequest is grep's input. OutputMode is "content" (path:line:text), "files" (paths, the default) or "count"
// (path:count). Glob filters files by name (a pattern without "/" matches the base name at any depth).
type GrepRequest struct {
	Pattern         string
	Path            string
	Glob            string
	CaseInsensitive bool
	Context         int
	OutputMode      string
}

// ListResult is the output of glob and grep. Text is what the model reads; Locations what the editor follows.
type ListResult struct {
	Text      string
	Locations []Location
	Count     int  // paths found (glob, grep files), or matching lines (grep content and count)
	Truncated bool // the result was cut at the cap
	Note      string
}
