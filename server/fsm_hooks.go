package server

import (
	"github.com/drover-project/drover/fsm"
	"github.com/drover-project/drover/structs"
)

// fsmHooks feeds the leader's scheduling components from applied entries.
// Every server installs it, but the broker and blocked evals ignore calls
// while disabled, so on followers each hook costs a mutex at most. The
// hooks run inside FSM.Apply: they only hand objects to in-memory queues
// (no Raft, no RPC, nothing that waits).
type fsmHooks struct {
	s    *Server
	next fsm.Hooks // Config.FSMHooks, called after ours; nil if none
}

var _ fsm.Hooks = (*fsmHooks)(nil)

// EvalsUpserted: pending evaluations go to the broker, blocked ones to
// blocked evals; a complete evaluation that placed everything ends the
// tracking of its job's blocked evaluations.
func (h *fsmHooks) EvalsUpserted(evals []*structs.Evaluation) {
	s := h.s
	if s.blocked.Enabled() {
		for _, e := range evals {
			switch {
			case e.ShouldEnqueue():
				s.broker.Enqueue(e)
			case e.ShouldBlock():
				s.blocked.Block(e)
				countBlocked(e)
			case e.Status == structs.EvalStatusComplete && len(e.FailedTGAllocs) == 0:
				s.blocked.Untrack(e.Namespace, e.JobID)
			}
		}
	}
	if h.next != nil {
		h.next.EvalsUpserted(evals)
	}
}

// NodeChanged: a node that can take placements releases the blocked
// evaluations its class could help, and those tied to it (system jobs).
func (h *fsmHooks) NodeChanged(node *structs.Node, index uint64) {
	s := h.s
	if node.Ready() && s.blocked.Enabled() {
		s.blocked.Unblock(node.Class(), index)
		s.blocked.UnblockNode(node.ID, index)
	}
	if h.next != nil {
		h.next.NodeChanged(node, index)
	}
}

// AllocsTerminal: capacity was freed on a node; release what its class
// could help.
func (h *fsmHooks) AllocsTerminal(nodeID string, index uint64) {
	s := h.s
	if s.blocked.Enabled() {
		if node, err := s.fsm.State().NodeByID(nil, nodeID); err == nil {
			s.blocked.Unblock(node.Class(), index)
			s.blocked.UnblockNode(nodeID, index)
		}
	}
	if h.next != nil {
		h.next.AllocsTerminal(nodeID, index)
	}
}
