package api

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// maxReason bounds an opt-out's reason.
const maxReason = 1000

// optOut answers POST /v1/nodes/{id}/sandbox-optout (admin): start, end or
// approve a node's sandbox opt-out. Ending acts at once; with four eyes a
// start holds only once a second, different admin approves it.
func (s *Server) optOut(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := jobs.CheckName("node", id); err != nil {
		writeErr(w, err)
		return
	}
	var req OptOutRequest
	if !decode(w, r, &req) {
		return
	}
	by := PrincipalOf(r.Context()).Name
	if n := btoi(req.End) + btoi(req.Approve) + btoi(req.Reason != ""); n != 1 {
		writeErr(w, errs.Invalidf("reason, end, approve: give exactly one (reason starts an opt-out)"))
		return
	}
	if len(req.Reason) > maxReason || strings.ContainsFunc(req.Reason, isControl) {
		writeErr(w, errs.Invalidf("reason: at most %d characters, no control characters", maxReason))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, known := s.nodes[id]
	cur, held := s.optouts[id]
	switch {
	case req.End:
		if !held {
			writeErr(w, errs.NotFoundf("node %s: no sandbox opt-out holds or waits", id))
			return
		}
		// Ended at once, whether or not it could be saved.
		delete(s.optouts, id)
		s.record(AuditOptOut, map[string]any{"node": id, "action": "end", "by": by, "reason": cur.Reason,
			"requested_by": cur.By, "approvers": cur.Approvers, "was_pending": cur.Pending})
		if err := s.saveLocked(); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("node %s: the opt-out ended now, but the change could not be saved (%s): a restart would bring it back; fix the server's state directory and end it again", id, errs.AgentMessage(err)))
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"node": id, "opt_out": "ended"})
	case req.Approve:
		if !held || !cur.Pending {
			writeErr(w, errs.NotFoundf("node %s: no sandbox opt-out waits for approval", id))
			return
		}
		if cur.By == by {
			writeError(w, http.StatusForbidden, fmt.Sprintf("node %s: the opt-out was asked for by %s; a second, different admin must approve it", id, by))
			return
		}
		prev := cur
		cur.Pending, cur.Approvers, cur.Since = false, append(cur.Approvers, by), s.cfg.Now()
		s.optouts[id] = cur
		if err := s.saveLocked(); err != nil {
			s.optouts[id] = prev
			writeErr(w, err)
			return
		}
		s.record(AuditOptOut, map[string]any{"node": id, "action": "start", "by": cur.By, "reason": cur.Reason, "approvers": cur.Approvers})
		writeJSON(w, http.StatusOK, cur)
	default:
		if !known {
			writeErr(w, errs.NotFoundf("node %s: not registered with this server (airlock node list)", id))
			return
		}
		if held {
			writeError(w, http.StatusConflict, fmt.Sprintf("node %s: an opt-out already holds or waits (end it first with --end)", id))
			return
		}
		o := OptOut{Node: id, Reason: req.Reason, By: by, Since: s.cfg.Now(), Pending: s.cfg.FourEyes}
		s.optouts[id] = o
		if err := s.saveLocked(); err != nil {
			delete(s.optouts, id)
			writeErr(w, err)
			return
		}
		action := "start"
		if o.Pending {
			action = "request"
		}
		s.record(AuditOptOut, map[string]any{"node": id, "action": action, "by": by, "reason": o.Reason, "four_eyes": s.cfg.FourEyes})
		writeJSON(w, http.StatusCreated, o)
	}
}

// saveLocked hands the opt-outs to Config.SaveOptOuts, so a restart of
// the server keeps them. s.mu is held.
func (s *Server) saveLocked() error {
	if s.cfg.SaveOptOuts == nil {
		return nil
	}
	all := make([]OptOut, 0, len(s.optouts))
	for _, o := range s.optouts {
		all = append(all, o)
	}
	sort.Slice(all, func(a, b int) bool { return all[a].Node < all[b].Node })
	if err := s.cfg.SaveOptOuts(all); err != nil {
		return errs.Wrap(errs.Unavailable, err, "save the sandbox opt-outs")
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// Eligible says whether node may poll queue: its own queue and its pool's
// always; its pool's floor queue at tier 1 or more, or while an admin's
// opt-out holds for it, or on --dev; nothing else. The Temporal
// authorizer asks it of every poll (the tier is the node's registered
// one, which attestation vouches for).
func (s *Server) Eligible(node, queue string) bool {
	if s.revoked(node) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[node]
	if !ok {
		return false
	}
	switch queue {
	case jobs.NodeQueue(node), jobs.PoolQueue(n.Pool):
		return true
	case jobs.FloorQueue(n.Pool):
		return n.Tier >= 1 || s.floorLocked(node)
	case jobs.Tier2Queue(n.Pool):
		return n.Tier >= 2
	}
	return false
}

// revoked says whether enrolment is on and node is not bound now (its
// binding removed on the server): its certificate, still within its life,
// then polls nothing and its answers are held as a node never registered.
func (s *Server) revoked(node string) bool {
	return s.cfg.CA != nil && !s.cfg.CA.Enrolled(node)
}

// Standing is node's attested tier and whether an admin's opt-out holds
// for it (not one still pending); known is false for a node that never
// registered. The Temporal frontend holds each claim and result of the
// node to it.
func (s *Server) Standing(node string) (tier int, optedOut, known bool) {
	if s.revoked(node) {
		return 0, false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[node]
	return n.Tier, s.optedOutLocked(node), ok
}

// floorLocked says whether node may take floor work below tier 1: an
// opt-out holds for it (not one still pending), or the server runs --dev.
// s.mu is held.
func (s *Server) floorLocked(node string) bool {
	o, ok := s.optouts[node]
	return s.cfg.Dev || (ok && !o.Pending)
}

// optedOutLocked says whether an opt-out holds for node. s.mu is held.
func (s *Server) optedOutLocked(node string) bool {
	o, ok := s.optouts[node]
	return ok && !o.Pending
}

// health is what a person should act on about node n, with the fix.
// s.mu is held.
func (s *Server) healthLocked(n NodeEntry) []string {
	var h []string
	if o, ok := s.optouts[n.ID]; ok {
		if o.Pending {
			h = append(h, fmt.Sprintf("sandbox opt-out asked for by %s waits for a second admin (%q); approve: airlock node sandbox-optout %s --approve", o.By, o.Reason, n.ID))
		} else {
			h = append(h, fmt.Sprintf("sandbox opt-out held since %s by %s (%q): floor work from inside runs here unconfined, marked tier 0; end it: airlock node sandbox-optout %s --end",
				o.Since.UTC().Format(time.RFC3339), o.By, o.Reason, n.ID))
		}
	}
	if n.Tier == 0 {
		h = append(h, "sandbox tier 0: the node takes only jobs started with --tier0; fix: run it on Linux with bubblewrap (airlock sandbox check)")
	}
	if s.cfg.Dev {
		h = append(h, "the server runs --dev: this node may take floor work whatever its tier")
	}
	return h
}

// tier1Live says whether pool has a live node that may take an outside
// event's job: tier 1 or more and not opted out (any live node not opted
// out, on --dev).
func (s *Server) tier1Live(pool string) bool {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.nodes {
		if n.Pool != pool || now.Sub(n.LastSeen) > s.cfg.NodeTTL || s.optedOutLocked(n.ID) {
			continue
		}
		if n.Tier >= 1 || s.cfg.Dev {
			return true
		}
	}
	return false
}
