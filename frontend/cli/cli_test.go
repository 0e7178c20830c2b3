package cli

import (
	"context"
	"strings"
	"testing"
)

// TestStrayArgumentIsRefused: acp, setup and undo take nothing but flags; a stray word is refused before anything
// runs, naming the subcommand and its help.
func TestStrayArgumentIsRefused(t *testing.T) {
	t.Setenv("GARUDA_HOME", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acp", "x"}, `acp: unexpected argument "x" (see garuda acp --help)`},
		{[]string{"acp", "setup", "--force", "x"}, `setup: unexpected argument "x" (see garuda setup --help)`},
		{[]string{"setup", "x"}, `setup: unexpected argument "x" (see garuda setup --help)`},
		{[]string{"undo", "x", "--list"}, `undo: unexpected argument "x" (see garuda undo --help)`},
	} {
		if err := Main(context.Background(), c.args); err == nil || err.Error() != c.want {
			t.Errorf("garuda %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
