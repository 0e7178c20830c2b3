package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/peercred"
	"github.com/garuda-dev/garuda/broker/sessionlog"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// listPage is the page size of ListSessions when the request names none, and the most it gives.
const listPage = 100

// entriesBatch bounds one ResumeSession message (gRPC refuses messages over 4 MiB by default).
const entriesBatch = 1 << 20

// ResumeSession reopens an earlier session of the caller's on the same root and streams its file's entries.
func (s *Service) ResumeSession(req *execv1.ResumeSessionRequest, stream execv1.ExecService_ResumeSessionServer) error {
	ctx := stream.Context()
	p, _ := peercred.FromContext(ctx)
	id := req.GetSessionId()
	if err := sessionlog.ValidID(id); err != nil {
		return toStatus(err)
	}
	root, err := checkRoot(req.GetRoot())
	if err != nil {
		return toStatus(err)
	}
	// Open here, a session is said to be open only to its owner: for another user's, Load below answers as for any
	// session of theirs (by its header), so that a shared broker tells nobody whether it is open.
	s.mu.Lock()
	openSess, open := s.sessions[id]
	s.mu.Unlock()
	if open && openSess.owner.UID == p.UID {
		return toStatus(fmt.Errorf("session %s: %w", id, ErrSessionOpen))
	}
	// Its header must name the caller and the root, then the file is locked and read: another user's session or
	// another project's (by the header alone), or one that another garuda acp has open, is refused before anything
	// of it is sent.
	loaded, err := sessionlog.Load(filepath.Join(s.cfg.Home, "sessions"), id, p.UID, root)
	if err != nil {
		return toStatus(err)
	}
	sess, res, err := s.openSession(p, root, execv1.Mode_MODE_BUILD, id, loaded)
	if err != nil {
		loaded.Writer.Close()
		return toStatus(err)
	}
	if loaded.Torn != "" {
		res.Notices = append(res.Notices, loaded.Torn)
	}
	var notices []string
	sess.mcp.editor, notices = editorMCPServers(req.GetMcpServers())
	res.Notices = append(res.Notices, notices...)
	s.mu.Lock()
	if _, open := s.sessions[id]; open {
		s.mu.Unlock()
		sess.close()
		return toStatus(fmt.Errorf("session %s: %w", id, ErrSessionOpen))
	}
	s.mu.Unlock()
	s.register(sess)
	if err := stream.Send(&execv1.ResumeSessionResponse{Msg: &execv1.ResumeSessionResponse_Opened{Opened: res}}); err != nil {
		return err
	}
	// The entries are read from the file as they are sent: memory is bounded by a batch, not by the session's length.
	batch := &execv1.SessionEntries{}
	size := 0
	err = loaded.Each(func(e sessionlog.Entry) error {
		batch.Entries = append(batch.Entries, &execv1.SessionEntry{Kind: e.Kind, Data: e.Data, Time: e.Time.Format(time.RFC3339Nano)})
		size += len(e.Data) + 64
		if size < entriesBatch {
			return nil
		}
		err := stream.Send(&execv1.ResumeSessionResponse{Msg: &execv1.ResumeSessionResponse_Entries{Entries: batch}})
		batch, size = &execv1.SessionEntries{}, 0
		return err
	})
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err // the stream's own error (the front end went away)
		}
		return toStatus(fmt.Errorf("session %s: read its file: %w", id, err))
	}
	if len(batch.Entries) > 0 {
		return stream.Send(&execv1.ResumeSessionResponse{Msg: &execv1.ResumeSessionResponse_Entries{Entries: batch}})
	}
	return nil
}

// ListSessions lists the caller's sessions, newest first.
func (s *Service) ListSessions(ctx context.Context, req *execv1.ListSessionsRequest) (*execv1.ListSessionsResponse, error) {
	p, _ := peercred.FromContext(ctx)
	root := ""
	if r := req.GetRoot(); r != "" {
		// Not checkRoot: a project folder that is gone still names its sessions.
		if !filepath.IsAbs(r) {
			return nil, toStatus(fmt.Errorf("root %q: %w", r, ErrRootNotAbsolute))
		}
		root = filepath.Clean(r)
	}
	limit := int(req.GetLimit())
	if limit <= 0 || limit > listPage {
		limit = listPage
	}
	page, next, err := sessionlog.List(filepath.Join(s.cfg.Home, "sessions"), p.UID, root, req.GetCursor(), limit)
	if err != nil {
		return nil, toStatus(err)
	}
	res := &execv1.ListSessionsResponse{NextCursor: next}
	for _, m := range page {
		res.Sessions = append(res.Sessions, &execv1.SessionSummary{SessionId: m.ID, Root: m.Root, Title: m.Title,
			UpdatedAt: m.Updated.UTC().Format(time.RFC3339)})
	}
	return res, nil
}

// sessionsOfConn counts the sessions of the calling connection.
func (s *Service) sessionsOfConn(ctx context.Context) int {
	p, _ := peercred.FromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sess := range s.sessions {
		if sess.owner.Conn == p.Conn && sess.owner.UID == p.UID {
			n++
		}
	}
	return n
}
