package broker

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/homefile"
	"github.com/garuda-dev/garuda/broker/sessionlog"
)

// Errors of the broker's own. The gRPC layer turns them into status codes once, in toStatus.
var (
	ErrRootNotAbsolute = errors.New("the root must be an absolute path")
	ErrRootNotFolder   = errors.New("the root must be an existing folder")
	ErrUnknownSession  = errors.New("no such session")
	ErrNotOwner        = errors.New("the session belongs to another connection")
	ErrBadMode         = errors.New("unknown mode (build or plan)")
	ErrProtocol        = errors.New("protocol violation")
	ErrBadRequest      = errors.New("bad request")
	ErrConfig          = errors.New("configuration error")
	ErrNothing         = errors.New("nothing to do")
	ErrTooMany         = errors.New("too many open sessions; close some first")
	ErrSessionOpen     = errors.New("the session is open already")
)

// toStatus is the one place where the broker's errors become gRPC status codes.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Internal
	switch {
	case errors.Is(err, ErrRootNotAbsolute), errors.Is(err, ErrRootNotFolder), errors.Is(err, ErrBadMode),
		errors.Is(err, ErrProtocol), errors.Is(err, ErrBadRequest), errors.Is(err, homefile.ErrBadID),
		errors.Is(err, sessionlog.ErrCorrupt), errors.Is(err, sessionlog.ErrBadCursor):
		code = codes.InvalidArgument
	case errors.Is(err, sessionlog.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, sessionlog.ErrForeign):
		code = codes.PermissionDenied
	case errors.Is(err, sessionlog.ErrLocked):
		code = codes.FailedPrecondition
	case errors.Is(err, ErrConfig):
		code = codes.FailedPrecondition
	case errors.Is(err, ErrNothing):
		code = codes.FailedPrecondition
	case errors.Is(err, ErrUnknownSession):
		code = codes.NotFound
	case errors.Is(err, ErrNotOwner):
		code = codes.PermissionDenied
	case errors.Is(err, context.Canceled), errors.Is(err, ErrShutdown):
		code = codes.Canceled
	case errors.Is(err, ErrTooMany):
		code = codes.ResourceExhausted
	case errors.Is(err, ErrSessionOpen):
		code = codes.FailedPrecondition
	}
	return status.Error(code, words(err))
}

// words is the message a user reads: the error without the sentinels' own words ("bad request", "configuration
// error", "nothing to do", "the session belongs to another user or project"), which only choose the status code.
func words(err error) string {
	msg := err.Error()
	for _, s := range []error{ErrBadRequest, ErrConfig, ErrNothing, sessionlog.ErrForeign} {
		w := s.Error()
		if errors.Is(err, s) && msg != w {
			msg = strings.Replace(msg, w+": ", "", 1)
			msg = strings.TrimSuffix(msg, ": "+w)
		}
	}
	return msg
}
