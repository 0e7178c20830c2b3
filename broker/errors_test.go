package broker

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/sessionlog"
	"github.com/garuda-dev/garuda/broker/undo"
)

// A status carries the failure's words; the sentinels that chose its code add none.
func TestToStatusWords(t *testing.T) {
	for _, c := range []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{fmt.Errorf("root /x: choose a project folder (not / nor $GARUDA_HOME): %w", ErrBadRequest), codes.InvalidArgument,
			"root /x: choose a project folder (not / nor $GARUDA_HOME)"},
		{fmt.Errorf("%w: models.json line 4: unknown key \"alow\"", ErrConfig), codes.FailedPrecondition,
			"models.json line 4: unknown key \"alow\""},
		{fmt.Errorf("no session has changes to undo: %w", ErrNothing), codes.FailedPrecondition, "no session has changes to undo"},
		{ErrBadRequest, codes.InvalidArgument, "bad request"},
		{fmt.Errorf("session s1 belongs to the project /a, not /b; open it from there: %w", sessionlog.ErrForeign),
			codes.PermissionDenied, "session s1 belongs to the project /a, not /b; open it from there"},
		{fmt.Errorf("root %q: %w", "x", ErrRootNotAbsolute), codes.InvalidArgument, `root "x": the root must be an absolute path`},
		{fmt.Errorf("undo %q: %w", "../x", undo.ErrBadSession), codes.InvalidArgument, `undo "../x": invalid session id`},
		{fmt.Errorf("session id %q: %w", "../x", sessionlog.ErrBadID), codes.InvalidArgument, `session id "../x": invalid session id`},
	} {
		st, _ := status.FromError(toStatus(c.err))
		if st.Code() != c.code || st.Message() != c.msg {
			t.Errorf("toStatus(%v) = %v %q, want %v %q", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
	}
}
