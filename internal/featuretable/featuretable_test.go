package featuretable

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	var b strings.Builder
	Write(&b, []Row{{"landlock", true, "ABI 7"}, {"seccomp", false, "missing"}})
	if got := b.String(); got != "landlock\tyes\tABI 7\nseccomp\tno\tmissing\n" {
		t.Errorf("%q", got)
	}
}
