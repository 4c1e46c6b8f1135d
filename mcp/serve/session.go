package serve

import (
	"context"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-run/airlock/mediator"
)

// sessions are the kernel sessions of the MCP sessions being served: the
// calls of one MCP session (stdio, or one HTTP session) run in that
// session's warm boxes, which end when the MCP session does.
type sessions struct {
	mu  sync.Mutex
	all map[*sdk.ServerSession]*mediator.Session
}

// bind returns ctx carrying the kernel session of ss, opened on its first
// call. A call of no session runs in a box of its own.
func (s *Server) bind(ctx context.Context, ss *sdk.ServerSession) context.Context {
	if ss == nil || s.o.FreshBoxes {
		return ctx
	}
	s.sess.mu.Lock()
	ks, ok := s.sess.all[ss]
	if !ok {
		if s.sess.all == nil {
			s.sess.all = map[*sdk.ServerSession]*mediator.Session{}
		}
		ks = s.o.Kernel.NewSession(0)
		s.sess.all[ss] = ks
		go func() {
			ss.Wait()
			s.sess.mu.Lock()
			delete(s.sess.all, ss)
			s.sess.mu.Unlock()
			ks.Close()
		}()
	}
	s.sess.mu.Unlock()
	return ks.Bind(ctx)
}

// openSessions is how many kernel sessions are open.
func (s *Server) openSessions() int {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	return len(s.sess.all)
}
