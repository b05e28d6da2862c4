package structs

import "time"

// Node faults and quarantine (Twitter Scoot's flaky nodes): failures that
// are the node's fault, not the job's, are counted per node in a sliding
// window on the leader; past a threshold the node is made ineligible
// (quarantined) until a re-probe after a cool-down passes. See
// server/quarantine and docs/reliability.md.

// Kinds of node fault. A fault is classified where it happens, by the
// code that knows whose fault it is (the client's task runner, the
// servers' node endpoints), and travels as one of these values: the
// servers never classify by an error's text. A task's own non-zero exit is
// the job's fault and has no kind.
const (
	// NodeFaultDriverStart: a task could not start because its driver
	// failed on the node (the driver is missing or unhealthy, or its start
	// failed with an error the driver marks as the node's).
	NodeFaultDriverStart = "driver-start"
	// NodeFaultDriverUnhealthy: a driver the node reported healthy is
	// reported unhealthy.
	NodeFaultDriverUnhealthy = "driver-unhealthy"
	// NodeFaultSetup: the allocation or task directory, its logs or its
	// cgroup could not be set up on the node (disk or cgroup errors).
	NodeFaultSetup = "setup"
	// NodeFaultHeartbeat: the node came back after it was marked down
	// for missed heartbeats (one down/up flap).
	NodeFaultHeartbeat = "heartbeat-flap"
)

// ValidNodeFaultKind reports whether k is one of the NodeFault* kinds.
func ValidNodeFaultKind(k string) bool {
	switch k {
	case NodeFaultDriverStart, NodeFaultDriverUnhealthy, NodeFaultSetup, NodeFaultHeartbeat:
		return true
	}
	return false
}

// NodeFault is one failure attributed to a node.
type NodeFault struct {
	NodeID string
	// Kind is one of the NodeFault* kinds.
	Kind string
	// AllocID, TaskName and Driver say where it happened, when known.
	AllocID  string `json:",omitempty"`
	TaskName string `json:",omitempty"`
	Driver   string `json:",omitempty"`
	// Time is when the fault happened (the reporter's clock; the leader
	// uses its own clock when it is zero or in the future).
	Time time.Time
}

// NodeQuarantine is a node's row of the node_quarantine table: its recent
// node faults and, once past the threshold, its quarantine. A node with
// no fault left in the window and not quarantined has no row.
type NodeQuarantine struct {
	NodeID string
	// Faults are the node's faults within the window, oldest first.
	Faults []*NodeFault
	// Quarantined is the marker: the leader made the node ineligible
	// because of its faults and will re-probe it at ProbeAt. Set together
	// with the node's SchedulingEligibility (ineligible) and a node event.
	Quarantined bool
	// Since is when the node was quarantined; Reason says why (also the
	// node event's message).
	Since  time.Time
	Reason string `json:",omitempty"`
	// ProbeAt is when the leader re-probes the node; Probes counts the
	// failed re-probes of this quarantine.
	ProbeAt time.Time
	Probes  int

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy (nil for nil).
func (q *NodeQuarantine) Copy() *NodeQuarantine {
	if q == nil {
		return nil
	}
	c := *q
	c.Faults = copySlice(q.Faults, shallow[NodeFault])
	return &c
}

// NodeQuarantineUpdateRequest is the leader's write of one node's
// quarantine row (Raft type NodeQuarantineUpdateRequestType). Quarantine
// replaces the row; one with no faults and not quarantined deletes it.
// When Eligibility is set, the node's SchedulingEligibility becomes it in
// the same entry (a quarantine, or its lift); NodeEvent, when set, is
// appended to the node's events; CreateEvals are written.
type NodeQuarantineUpdateRequest struct {
	Quarantine  *NodeQuarantine
	Eligibility string
	NodeEvent   *NodeEvent
	UpdatedAt   int64
	CreateEvals []*Evaluation
	WriteRequest
}
