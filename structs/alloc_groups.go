package structs

import (
	"fmt"
	"reflect"
)

// Allocation groups: the compact form of a plan's placements in its Raft
// entry.
//
// The placements a plan makes for one task group differ only in their
// identity (ID, Name), their node (NodeID, NodeName) and, sometimes, their
// placement metrics; everything else (namespace, job, eval, group,
// resources, statuses, times, version) is the same. Written one by one,
// each allocation carries every field name and value again: ~650 bytes,
// decoded into ~30 heap objects on every server. An AllocGroup carries the
// shared fields once, in a template allocation, and the per-allocation
// fields as parallel lists of strings; distinct metrics are written once
// and referenced by position. The FSM expands the groups back into
// allocations that share the template's resources and the metrics (stored
// objects are never mutated, so sharing is safe), which also makes the
// stored allocations smaller.
//
// ApplyPlanResultsRequest.Compact moves the allocations of AllocsUpdated
// that fit a group into AllocGroups; Expand moves them back. An entry
// without groups (written before groups existed, or by Compact finding
// nothing to group) decodes and applies as before.

// AllocGroup is allocations that share all but their identity, node and
// metrics.
type AllocGroup struct {
	// Template holds the shared fields; its ID, Name, NodeID, NodeName and
	// Metrics are empty.
	Template *Allocation
	// IDs, Names, NodeIDs and NodeNames have one entry per allocation.
	IDs, Names, NodeIDs, NodeNames []string
	// Metrics are the group's distinct placement metrics; MetricIndex
	// has one entry per allocation: its position in Metrics.
	Metrics     []*AllocMetric
	MetricIndex []int
	// Ports and Networks are each allocation's own ports and granted
	// networks (AllocatedResources.Shared.Ports and .Networks), one entry
	// per allocation; nil when no allocation of the group has any. The
	// template's resources hold neither: placements with ports differ
	// only there, and still share everything else.
	Ports    [][]AllocatedPortMapping
	Networks [][]*NetworkResource
}

// groupScanLimit bounds the groups Compact tries for each allocation, so
// a plan of allocations that all differ costs linear time. A plan has a
// group per task group it places, and few plans place more than a handful.
const groupScanLimit = 8

// metricScanLimit bounds the distinct metrics a group compares a new one
// with (the most recent first).
const metricScanLimit = 4

// Compact moves each allocation of AllocsUpdated that shares its template
// fields with another into new AllocGroups (after any already there); the
// rest stay in AllocsUpdated, in their order. Groups with a single
// allocation are not made. Expand restores the allocations (group members
// after the others).
func (r *ApplyPlanResultsRequest) Compact() {
	if len(r.AllocsUpdated) < 2 {
		return
	}
	type candidate struct {
		members []*Allocation
	}
	var groups []*candidate
	var singles []*Allocation
	for _, a := range r.AllocsUpdated {
		if a == nil {
			singles = append(singles, a)
			continue
		}
		var g *candidate
		start := max(0, len(groups)-groupScanLimit)
		for _, c := range groups[start:] {
			if sameGroup(c.members[0], a) {
				g = c
				break
			}
		}
		if g == nil {
			g = &candidate{}
			groups = append(groups, g)
		}
		g.members = append(g.members, a)
	}
	made := 0
	for _, c := range groups {
		if len(c.members) < 2 {
			singles = append(singles, c.members[0])
			continue
		}
		r.AllocGroups = append(r.AllocGroups, newAllocGroup(c.members))
		made++
	}
	if made == 0 {
		return
	}
	// Keep the singles in their original order.
	kept := make(map[*Allocation]bool, len(singles))
	for _, a := range singles {
		kept[a] = true
	}
	out := r.AllocsUpdated[:0:0]
	for _, a := range r.AllocsUpdated {
		if kept[a] {
			out = append(out, a)
		}
	}
	r.AllocsUpdated = out
}

func newAllocGroup(members []*Allocation) *AllocGroup {
	t := *members[0]
	t.ID, t.Name, t.NodeID, t.NodeName, t.Metrics = "", "", "", "", nil
	withPorts := false
	for _, a := range members {
		if ar := a.AllocatedResources; ar != nil && (len(ar.Shared.Ports) > 0 || len(ar.Shared.Networks) > 0) {
			withPorts = true
			break
		}
	}
	if withPorts {
		ar := *t.AllocatedResources
		ar.Shared.Ports, ar.Shared.Networks = nil, nil
		t.AllocatedResources = &ar
	}
	n := len(members)
	g := &AllocGroup{
		Template: &t,
		IDs:      make([]string, n), Names: make([]string, n),
		NodeIDs: make([]string, n), NodeNames: make([]string, n),
		MetricIndex: make([]int, n),
	}
	if withPorts {
		g.Ports, g.Networks = make([][]AllocatedPortMapping, n), make([][]*NetworkResource, n)
	}
	for i, a := range members {
		g.IDs[i], g.Names[i], g.NodeIDs[i], g.NodeNames[i] = a.ID, a.Name, a.NodeID, a.NodeName
		g.MetricIndex[i] = g.metricIndex(a.Metrics)
		if withPorts && a.AllocatedResources != nil {
			g.Ports[i], g.Networks[i] = a.AllocatedResources.Shared.Ports, a.AllocatedResources.Shared.Networks
		}
	}
	return g
}

// metricIndex returns m's position in g.Metrics, adding it when none of
// the last few is equal.
func (g *AllocGroup) metricIndex(m *AllocMetric) int {
	for i := len(g.Metrics) - 1; i >= 0 && i >= len(g.Metrics)-metricScanLimit; i-- {
		if sameMetric(g.Metrics[i], m) {
			return i
		}
	}
	g.Metrics = append(g.Metrics, m)
	return len(g.Metrics) - 1
}

// Expand moves the allocations of AllocGroups to the end of
// AllocsUpdated, each a copy of its group's template with its own
// identity, node and metrics, and clears AllocGroups. A malformed group
// (lists of different lengths, a metric index out of range) is an error
// naming it; nothing is moved then.
func (r *ApplyPlanResultsRequest) Expand() error {
	if len(r.AllocGroups) == 0 {
		return nil
	}
	total := len(r.AllocsUpdated)
	for i, g := range r.AllocGroups {
		if err := g.check(); err != nil {
			return &ValidationError{Errors: []FieldError{{Field: fmt.Sprintf("AllocGroups[%d]", i), Message: err.Error()}}}
		}
		total += len(g.IDs)
	}
	out := make([]*Allocation, 0, total)
	out = append(out, r.AllocsUpdated...)
	for _, g := range r.AllocGroups {
		block := make([]Allocation, len(g.IDs))
		// Allocations with ports each get their own resources: the
		// template's, with their ports (the task resources stay shared).
		var res []AllocatedResources
		if g.Ports != nil && g.Template.AllocatedResources != nil {
			res = make([]AllocatedResources, len(g.IDs))
		}
		for i := range block {
			a := &block[i]
			*a = *g.Template
			a.ID, a.Name, a.NodeID, a.NodeName = g.IDs[i], g.Names[i], g.NodeIDs[i], g.NodeNames[i]
			a.Metrics = g.Metrics[g.MetricIndex[i]]
			if res != nil {
				res[i] = *g.Template.AllocatedResources
				res[i].Shared.Ports, res[i].Shared.Networks = g.Ports[i], g.Networks[i]
				a.AllocatedResources = &res[i]
			}
			out = append(out, a)
		}
	}
	r.AllocsUpdated = out
	r.AllocGroups = nil
	return nil
}

func (g *AllocGroup) check() error {
	if g == nil || g.Template == nil {
		return errString("group without a template")
	}
	n := len(g.IDs)
	switch {
	case len(g.Names) != n || len(g.NodeIDs) != n || len(g.NodeNames) != n || len(g.MetricIndex) != n:
		return errString("per-allocation lists of different lengths")
	case g.Ports != nil && (len(g.Ports) != n || len(g.Networks) != n):
		return errString("per-allocation port lists of different lengths")
	case g.Ports == nil && g.Networks != nil:
		return errString("networks without ports")
	}
	for _, m := range g.MetricIndex {
		if m < 0 || m >= len(g.Metrics) {
			return errString("metric index out of range")
		}
	}
	return nil
}

// sameGroup reports whether a and b agree on every field a group's
// template carries: all but ID, Name, NodeID, NodeName and Metrics.
// TestSameGroupCoversEveryField fails when a field is added to Allocation
// and not compared here.
func sameGroup(a, b *Allocation) bool {
	if a.Namespace != b.Namespace || a.EvalID != b.EvalID || a.JobID != b.JobID ||
		a.TaskGroup != b.TaskGroup || a.DesiredStatus != b.DesiredStatus ||
		a.DesiredDescription != b.DesiredDescription || a.ClientStatus != b.ClientStatus ||
		a.ClientDescription != b.ClientDescription || a.DeploymentID != b.DeploymentID ||
		a.FollowupEvalID != b.FollowupEvalID || a.PreviousAllocation != b.PreviousAllocation ||
		a.NextAllocation != b.NextAllocation || a.CreateIndex != b.CreateIndex ||
		a.ModifyIndex != b.ModifyIndex || a.AllocModifyIndex != b.AllocModifyIndex ||
		a.PreemptedByAllocation != b.PreemptedByAllocation ||
		a.CreateTime != b.CreateTime || a.ModifyTime != b.ModifyTime || a.JobVersion != b.JobVersion ||
		a.Job != b.Job {
		return false
	}
	// Fields a new placement leaves empty group only when empty in both:
	// nil and empty differ on the wire, and comparing them is not worth it.
	if !a.TaskStates.IsZero() || !b.TaskStates.IsZero() || a.RescheduleTracker != nil || b.RescheduleTracker != nil ||
		a.DeploymentStatus != nil || b.DeploymentStatus != nil ||
		a.PreemptedAllocations != nil || b.PreemptedAllocations != nil {
		return false
	}
	if !sameBoolPtr(a.DesiredTransition.Migrate, b.DesiredTransition.Migrate) ||
		!sameBoolPtr(a.DesiredTransition.Reschedule, b.DesiredTransition.Reschedule) ||
		!sameBoolPtr(a.DesiredTransition.ForceReschedule, b.DesiredTransition.ForceReschedule) {
		return false
	}
	return sameResources(a.AllocatedResources, b.AllocatedResources)
}

// sameResources compares two allocations' resources but for their own
// ports and granted networks (which a group carries per allocation).
func sameResources(a, b *AllocatedResources) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Shared.DiskMB == b.Shared.DiskMB && reflect.DeepEqual(a.Tasks, b.Tasks)
}

func sameBoolPtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// sameMetric reports whether two metrics are equal, cheap fields first.
func sameMetric(a, b *AllocMetric) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if a.NodesEvaluated != b.NodesEvaluated || a.NodesFiltered != b.NodesFiltered ||
		a.NodesInPool != b.NodesInPool || a.NodesExhausted != b.NodesExhausted ||
		a.AllocationTime != b.AllocationTime || a.CoalescedFailures != b.CoalescedFailures {
		return false
	}
	return reflect.DeepEqual(a, b)
}

type errString string

func (e errString) Error() string { return string(e) }
