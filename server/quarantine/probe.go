package quarantine

import (
	"fmt"
	"sort"

	"github.com/drover-project/drover/structs"
)

// ProbeInput is what the re-probe of a quarantined node looks at.
type ProbeInput struct {
	// Node is the node's current row.
	Node *structs.Node
	// Heartbeating reports whether the leader holds a live heartbeat
	// timer for the node (the node heartbeated since this leader, or its
	// predecessor, last saw it).
	Heartbeating bool
}

// Probe is the re-probe of a quarantined node: nil when the node may go
// back to service, else why not. It passes when the node is ready (status
// ready, not draining), heartbeating, its readiness gate (when the client
// reports one) last passed, and every driver it reports detected is
// healthy.
//
// It is the one place the quarantine decides a node is well again. The
// readiness gate's result is as current as the client keeps it: with
// client { readiness { recheck = true } } the operator's command runs every
// interval, so the probe reads its latest outcome; without it, the outcome
// of the gate at the client's start.
func Probe(in ProbeInput) error {
	n := in.Node
	switch {
	case n == nil:
		return fmt.Errorf("node is gone")
	case n.Status != structs.NodeStatusReady:
		return fmt.Errorf("node status is %s", n.Status)
	case n.Drain || n.DrainStrategy != nil:
		return fmt.Errorf("node is draining")
	case !in.Heartbeating:
		return fmt.Errorf("node is not heartbeating")
	case n.Readiness != nil && !n.Readiness.Passed:
		return fmt.Errorf("node readiness check failing: %s", n.Readiness.Message)
	}
	var sick []string
	for name, d := range n.Drivers {
		if d != nil && d.Detected && !d.Healthy {
			sick = append(sick, name)
		}
	}
	if len(sick) > 0 {
		sort.Strings(sick)
		return fmt.Errorf("drivers unhealthy: %v", sick)
	}
	return nil
}
