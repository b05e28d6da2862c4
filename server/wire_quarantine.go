package server

import (
	"time"

	"github.com/drover-project/drover/server/quarantine"
	"github.com/drover-project/drover/structs"
)

// This file wires the flaky-node quarantine (package quarantine) into the
// server: the watcher runs as a leader hook; the node endpoints report the
// node faults they see (client-reported ones with Node.UpdateAlloc, a
// driver turning unhealthy on Node.Register, a node back from down on
// Node.Register and Node.UpdateStatus); quarantineWriter writes its
// decisions as NodeQuarantineUpdate entries.

const quarantineHookName = "node_quarantine"

// NodeQuarantineConfig is the server's node_quarantine block. Zero values
// take the package's defaults (3 faults in 10 minutes, a 15-minute
// cool-down); the quarantine is on unless Disabled.
type NodeQuarantineConfig struct {
	Disabled  bool
	Threshold int
	Window    time.Duration
	Cooldown  time.Duration
}

// newQuarantine creates the (idle) quarantine watcher, unless disabled.
func (s *Server) newQuarantine() error {
	cfg := s.config.NodeQuarantine
	if cfg.Disabled {
		return nil
	}
	w, err := quarantine.New(quarantine.Config{
		Logger:       s.logger,
		State:        func() quarantine.State { return s.fsm.State() },
		Writer:       quarantineWriter{s: s},
		Policy:       quarantine.Policy{Threshold: cfg.Threshold, Window: cfg.Window, Cooldown: cfg.Cooldown},
		Heartbeating: s.heartbeats.Tracking,
	})
	if err != nil {
		return err
	}
	s.quarantine = w
	return nil
}

// reportNodeFaults hands node faults to the quarantine watcher (a no-op
// when the quarantine is disabled or this server is not leading).
func (s *Server) reportNodeFaults(faults ...*structs.NodeFault) {
	if s.quarantine != nil && len(faults) > 0 {
		s.quarantine.Report(faults...)
	}
}

// nodeChangeFaults returns the faults a node registration shows against
// the stored node: each driver that was healthy and is now detected but
// unhealthy, and a node back from down (a heartbeat flap).
func nodeChangeFaults(prev, next *structs.Node, now time.Time) []*structs.NodeFault {
	if prev == nil {
		return nil
	}
	var out []*structs.NodeFault
	for name, d := range next.Drivers {
		was := prev.Drivers[name]
		if d != nil && d.Detected && !d.Healthy && was != nil && was.Detected && was.Healthy {
			out = append(out, &structs.NodeFault{NodeID: next.ID, Kind: structs.NodeFaultDriverUnhealthy, Driver: name, Time: now})
		}
	}
	if f := flapFault(prev, next.Status, now); f != nil {
		out = append(out, f)
	}
	return out
}

// flapFault returns the heartbeat-flap fault of a node going from down to
// another status, or nil.
func flapFault(prev *structs.Node, status string, now time.Time) *structs.NodeFault {
	if prev.Status != structs.NodeStatusDown || status == structs.NodeStatusDown {
		return nil
	}
	return &structs.NodeFault{NodeID: prev.ID, Kind: structs.NodeFaultHeartbeat, Time: now}
}

// quarantineHook runs the quarantine watcher while leading.
type quarantineHook struct{ run leaderRun }

func (h *quarantineHook) Name() string { return quarantineHookName }

func (h *quarantineHook) Establish(s *Server) error {
	if s.quarantine != nil {
		h.run.start(s, s.quarantine.Run)
	}
	return nil
}

func (h *quarantineHook) Revoke(*Server) error {
	h.run.stop()
	return nil
}

// quarantineWriter writes the watcher's decisions through Raft.
type quarantineWriter struct{ s *Server }

var _ quarantine.Writer = quarantineWriter{}

// UpdateQuarantine writes req in one entry; a node made eligible again
// gets its evaluations in it, as on an eligibility change.
func (w quarantineWriter) UpdateQuarantine(req *structs.NodeQuarantineUpdateRequest) error {
	batch := &nodeEvalBatch{}
	if req.Eligibility == structs.NodeSchedulingEligible {
		st := w.s.fsm.State()
		node, err := st.NodeByID(nil, req.Quarantine.NodeID)
		if err != nil {
			return err
		}
		next := node.Copy()
		next.SchedulingEligibility = structs.NodeSchedulingEligible
		if next.Ready() && !node.Ready() {
			if batch, err = w.s.nodeEvals(st, next, time.Now()); err != nil {
				return err
			}
			c := *req
			c.CreateEvals = batch.evals
			req = &c
		}
	}
	index, _, err := w.s.raftApply(structs.NodeQuarantineUpdateRequestType, req)
	batch.done(index)
	return err
}
