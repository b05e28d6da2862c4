package quarantine

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// Defaults of Policy fields left zero (Scoot's cool-down of 15 minutes).
const (
	DefaultThreshold = 3
	DefaultWindow    = 10 * time.Minute
	DefaultCooldown  = 15 * time.Minute
)

// Node event subsystem and messages.
const (
	EventSubsystem   = "Quarantine"
	EventQuarantined = "Node quarantined"
	EventLifted      = "Quarantine lifted"
	EventProbeFailed = "Quarantine probe failed"
	// DetailQuarantine is the event detail that marks a quarantine's
	// events ("true" while quarantined, "false" once lifted).
	DetailQuarantine = "quarantine"
)

// Policy is when a node is quarantined and for how long.
type Policy struct {
	// Threshold faults within Window quarantine a node.
	Threshold int
	Window    time.Duration
	// Cooldown is the time from a quarantine (or a failed probe) to the
	// next probe.
	Cooldown time.Duration
}

// withDefaults fills zero fields.
func (p Policy) withDefaults() Policy {
	if p.Threshold <= 0 {
		p.Threshold = DefaultThreshold
	}
	if p.Window <= 0 {
		p.Window = DefaultWindow
	}
	if p.Cooldown <= 0 {
		p.Cooldown = DefaultCooldown
	}
	return p
}

// maxFaults bounds the faults a row keeps (the newest).
func (p Policy) maxFaults() int { return max(2*p.Threshold, 16) }

// Reader is the state Plan reads. *state.StateStore satisfies it.
type Reader interface {
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
	NodeQuarantines(ws memdb.WatchSet) ([]*structs.NodeQuarantine, error)
}

// Pass is what one pass decided.
type Pass struct {
	// Writes are the rows to write, in node ID order.
	Writes []*structs.NodeQuarantineUpdateRequest
	// Quarantined, Lifted and ProbeFailed are the node IDs of each
	// outcome, for logs and metrics; Faults counts the faults recorded
	// by kind.
	Quarantined, Lifted, ProbeFailed []string
	Faults                           map[string]int
	// NextDeadline is when the next pass is due without any change: the
	// next probe, or the next fault to leave its window (zero: none).
	NextDeadline time.Time
}

// Plan decides one pass at now: it records faults (reported since the
// last pass) in their nodes' rows, quarantines nodes at the threshold,
// probes quarantined nodes whose ProbeAt has come, and drops faults that
// left the window. It reads the quarantine rows with ws (so a pass is due
// when they change); probe is Probe with the leader's view of heartbeats.
func Plan(r Reader, ws memdb.WatchSet, now time.Time, faults []*structs.NodeFault, pol Policy, probe func(*structs.Node) error) (*Pass, error) {
	pol = pol.withDefaults()
	rows, err := r.NodeQuarantines(ws)
	if err != nil {
		return nil, err
	}
	byNode := make(map[string]*structs.NodeQuarantine, len(rows))
	for _, q := range rows {
		byNode[q.NodeID] = q
	}
	p := &Pass{}
	next := map[string]*structs.NodeQuarantine{} // rows as they will be
	for _, q := range rows {
		next[q.NodeID] = q
	}

	reported := groupFaults(faults)
	for _, id := range sortedKeys(reported) {
		node, err := r.NodeByID(nil, id)
		if errors.Is(err, structs.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		row := byNode[id].Copy()
		if row == nil {
			row = &structs.NodeQuarantine{NodeID: id}
		}
		for _, f := range reported[id] {
			if !structs.ValidNodeFaultKind(f.Kind) {
				continue
			}
			c := *f
			if c.Time.IsZero() || c.Time.After(now) {
				c.Time = now
			}
			row.Faults = append(row.Faults, &c)
			if p.Faults == nil {
				p.Faults = map[string]int{}
			}
			p.Faults[c.Kind]++
		}
		sort.SliceStable(row.Faults, func(i, j int) bool { return row.Faults[i].Time.Before(row.Faults[j].Time) })
		prune(row, now, pol)
		req := &structs.NodeQuarantineUpdateRequest{Quarantine: row}
		if !row.Quarantined && len(row.Faults) >= pol.Threshold && eligible(node) {
			quarantine(req, now, pol)
			p.Quarantined = append(p.Quarantined, id)
		}
		p.Writes = append(p.Writes, req)
		next[id] = row
		delete(byNode, id) // handled
	}

	for _, id := range sortedKeys(byNode) {
		q := byNode[id]
		switch {
		case q.Quarantined && !q.ProbeAt.After(now):
			node, err := r.NodeByID(nil, id)
			if errors.Is(err, structs.ErrNotFound) {
				continue // its row goes with it
			} else if err != nil {
				return nil, err
			}
			req := probeNode(q, node, now, pol, probe)
			if req.Eligibility == structs.NodeSchedulingEligible {
				p.Lifted = append(p.Lifted, id)
			} else {
				p.ProbeFailed = append(p.ProbeFailed, id)
			}
			p.Writes = append(p.Writes, req)
			next[id] = req.Quarantine
		case !q.Quarantined && len(q.Faults) > 0 && !q.Faults[0].Time.After(now.Add(-pol.Window)):
			row := q.Copy()
			prune(row, now, pol)
			p.Writes = append(p.Writes, &structs.NodeQuarantineUpdateRequest{Quarantine: row})
			next[id] = row
		}
	}
	sort.SliceStable(p.Writes, func(i, j int) bool { return p.Writes[i].Quarantine.NodeID < p.Writes[j].Quarantine.NodeID })

	for _, q := range next {
		var due time.Time
		switch {
		case q.Quarantined:
			due = q.ProbeAt
		case len(q.Faults) > 0:
			due = q.Faults[0].Time.Add(pol.Window)
		default:
			continue
		}
		if p.NextDeadline.IsZero() || due.Before(p.NextDeadline) {
			p.NextDeadline = due
		}
	}
	return p, nil
}

// eligible reports whether the quarantine may take node out of service:
// eligible and not draining. A node an operator made ineligible or drains
// is the operator's; a quarantine would later make it eligible again.
func eligible(n *structs.Node) bool {
	return n.SchedulingEligibility == structs.NodeSchedulingEligible && !n.Drain && n.DrainStrategy == nil
}

// prune drops the faults that left the window, and the oldest beyond the
// bound. row.Faults must be in time order.
func prune(row *structs.NodeQuarantine, now time.Time, pol Policy) {
	cut := now.Add(-pol.Window)
	i := 0
	for i < len(row.Faults) && !row.Faults[i].Time.After(cut) {
		i++
	}
	if n := len(row.Faults) - i; n > pol.maxFaults() {
		i += n - pol.maxFaults()
	}
	if i > 0 {
		row.Faults = append([]*structs.NodeFault(nil), row.Faults[i:]...)
	}
	if len(row.Faults) == 0 {
		row.Faults = nil
	}
}

// quarantine turns req into a quarantine: the marker, the node ineligible
// and the event saying why.
func quarantine(req *structs.NodeQuarantineUpdateRequest, now time.Time, pol Policy) {
	row := req.Quarantine
	row.Quarantined = true
	row.Since = now
	row.ProbeAt = now.Add(pol.Cooldown)
	row.Probes = 0
	row.Reason = fmt.Sprintf("%d node faults in %s (%s)", len(row.Faults), pol.Window, kindSummary(row.Faults))
	req.Eligibility = structs.NodeSchedulingIneligible
	req.UpdatedAt = now.Unix()
	req.NodeEvent = &structs.NodeEvent{
		Message:   EventQuarantined + ": " + row.Reason,
		Subsystem: EventSubsystem,
		Timestamp: now,
		Details: map[string]string{
			DetailQuarantine: "true",
			"faults":         strconv.Itoa(len(row.Faults)),
			"window":         pol.Window.String(),
			"probe_at":       row.ProbeAt.UTC().Format(time.RFC3339),
		},
	}
}

// probeNode probes a quarantined node: a pass lifts the quarantine (the
// node eligible, its faults forgotten, the row deleted); a failure keeps
// it for another cool-down.
func probeNode(q *structs.NodeQuarantine, node *structs.Node, now time.Time, pol Policy, probe func(*structs.Node) error) *structs.NodeQuarantineUpdateRequest {
	if err := probe(node); err != nil {
		row := q.Copy()
		row.Probes++
		row.ProbeAt = now.Add(pol.Cooldown)
		return &structs.NodeQuarantineUpdateRequest{
			Quarantine: row,
			NodeEvent: &structs.NodeEvent{
				Message:   EventProbeFailed + ": " + err.Error(),
				Subsystem: EventSubsystem,
				Timestamp: now,
				Details: map[string]string{
					DetailQuarantine: "true",
					"probe_error":    err.Error(),
					"probe_at":       row.ProbeAt.UTC().Format(time.RFC3339),
				},
			},
		}
	}
	return &structs.NodeQuarantineUpdateRequest{
		Quarantine:  &structs.NodeQuarantine{NodeID: q.NodeID},
		Eligibility: structs.NodeSchedulingEligible,
		UpdatedAt:   now.Unix(),
		NodeEvent: &structs.NodeEvent{
			Message:   EventLifted,
			Subsystem: EventSubsystem,
			Timestamp: now,
			Details:   map[string]string{DetailQuarantine: "false", "quarantined_since": q.Since.UTC().Format(time.RFC3339)},
		},
	}
}

// kindSummary counts faults by kind: "driver-start: 2, setup: 1".
func kindSummary(faults []*structs.NodeFault) string {
	counts := map[string]int{}
	for _, f := range faults {
		counts[f.Kind]++
	}
	parts := make([]string, 0, len(counts))
	for _, k := range sortedKeys(counts) {
		parts = append(parts, k+": "+strconv.Itoa(counts[k]))
	}
	return strings.Join(parts, ", ")
}

// groupFaults groups faults by node, in report order.
func groupFaults(faults []*structs.NodeFault) map[string][]*structs.NodeFault {
	out := map[string][]*structs.NodeFault{}
	for _, f := range faults {
		if f != nil && f.NodeID != "" {
			out[f.NodeID] = append(out[f.NodeID], f)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
