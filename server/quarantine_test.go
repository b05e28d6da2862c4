package server_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/quarantine"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// quarantineRow returns the node's quarantine row, or nil.
func quarantineRow(t *testing.T, st *state.StateStore, nodeID string) *structs.NodeQuarantine {
	t.Helper()
	q, err := st.NodeQuarantineByID(nil, nodeID)
	if errors.Is(err, structs.ErrNotFound) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return q
}

func faultCount(t *testing.T, st *state.StateStore, nodeID string) int {
	if q := quarantineRow(t, st, nodeID); q != nil {
		return len(q.Faults)
	}
	return 0
}

// lastQuarantineEvent returns the message of the node's latest event of
// the quarantine subsystem.
func lastQuarantineEvent(st *state.StateStore, nodeID string) string {
	n, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return ""
	}
	for i := len(n.Events) - 1; i >= 0; i-- {
		if n.Events[i].Subsystem == quarantine.EventSubsystem {
			return n.Events[i].Message
		}
	}
	return ""
}

// TestNodeQuarantineEndpoints: the node endpoints report node faults to
// the leader's quarantine: client-reported ones with Node.UpdateAlloc
// (checked: a known kind, a node whose secret the request carries), a
// driver turning unhealthy on Node.Register, a node back from down. A
// failed allocation without a node fault (the job's own failure) counts
// for nothing. Past the threshold the node is ineligible with a
// quarantine event; `node eligibility -enable` (Node.UpdateEligibility)
// clears it; after the cool-down the probe fails while a driver is
// unhealthy and passes once it is healthy again.
func TestNodeQuarantineEndpoints(t *testing.T) {
	const cooldown = 300 * time.Millisecond
	s := schedServer(t, 1, func(cfg *server.Config) {
		cfg.NodeQuarantine = server.NodeQuarantineConfig{Threshold: 3, Cooldown: cooldown}
	})
	st := s.State
	node := mock.Node()
	registerNode(t, s, node)
	job := smallJob("q", 1)
	submitJob(t, s, job)
	var alloc *structs.Allocation
	waitFor(t, 10*time.Second, func() string {
		live := liveAllocs(st(), job.Namespace, job.ID)
		if len(live) != 1 {
			return "not placed yet"
		}
		alloc = live[0]
		return ""
	})
	update := func(status string, faults ...*structs.NodeFault) error {
		req := clientUpdate(t, st(), &structs.Allocation{ID: alloc.ID, ClientStatus: status})
		req.NodeFaults = faults
		return s.RPC("Node.UpdateAlloc", req, &structs.GenericResponse{})
	}

	// The job's own failures: nothing counted.
	for i := 0; i < 4; i++ {
		if err := update(structs.AllocClientStatusRunning); err != nil {
			t.Fatal(err)
		}
	}
	// Refused: an unknown kind, a node whose secret is not carried.
	err := update(structs.AllocClientStatusRunning, &structs.NodeFault{NodeID: node.ID, Kind: "exit-code"})
	if structs.CodeOf(err) != structs.ErrCodeInvalid || !strings.Contains(err.Error(), "NodeFaults[0].Kind") {
		t.Fatalf("unknown kind: %v", err)
	}
	err = update(structs.AllocClientStatusRunning, &structs.NodeFault{NodeID: "other", Kind: structs.NodeFaultSetup})
	if structs.CodeOf(err) != structs.ErrCodePermissionDenied {
		t.Fatalf("fault on another node: %v", err)
	}
	if n := faultCount(t, st(), node.ID); n != 0 {
		t.Fatalf("%d faults counted from job failures and refused updates", n)
	}

	// Two client-reported faults, then a driver turning unhealthy.
	if err := update(structs.AllocClientStatusPending,
		&structs.NodeFault{NodeID: node.ID, Kind: structs.NodeFaultSetup, AllocID: alloc.ID, TaskName: "web"},
		&structs.NodeFault{NodeID: node.ID, Kind: structs.NodeFaultDriverStart, AllocID: alloc.ID, TaskName: "web", Driver: "exec"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() string {
		return map[bool]string{true: "", false: fmt.Sprintf("%d faults", faultCount(t, st(), node.ID))}[faultCount(t, st(), node.ID) == 2]
	})
	sick := node.Copy()
	for _, d := range sick.Drivers {
		d.Healthy, d.HealthDescription = false, "broken"
	}
	registerNode(t, s, sick)
	waitFor(t, 5*time.Second, func() string {
		q := quarantineRow(t, st(), node.ID)
		if q == nil || !q.Quarantined {
			return "not quarantined"
		}
		return ""
	})
	n, _ := st().NodeByID(nil, node.ID)
	if n.SchedulingEligibility != structs.NodeSchedulingIneligible || !strings.HasPrefix(lastQuarantineEvent(st(), node.ID), quarantine.EventQuarantined) {
		t.Fatalf("quarantined node: %s, event %q", n.SchedulingEligibility, lastQuarantineEvent(st(), node.ID))
	}

	// The probe fails while the driver is unhealthy...
	waitFor(t, 5*time.Second, func() string {
		if q := quarantineRow(t, st(), node.ID); q == nil || q.Probes == 0 {
			return "no failed probe yet"
		}
		return ""
	})
	if ev := lastQuarantineEvent(st(), node.ID); !strings.HasPrefix(ev, quarantine.EventProbeFailed) || !strings.Contains(ev, "unhealthy") {
		t.Fatalf("failed probe event %q", ev)
	}
	// ...and passes once it is healthy again.
	registerNode(t, s, node)
	waitFor(t, 5*time.Second, func() string {
		n, _ := st().NodeByID(nil, node.ID)
		if quarantineRow(t, st(), node.ID) != nil || n.SchedulingEligibility != structs.NodeSchedulingEligible {
			return "not lifted"
		}
		return ""
	})
	if ev := lastQuarantineEvent(st(), node.ID); ev != quarantine.EventLifted {
		t.Fatalf("lift event %q", ev)
	}

	// Heartbeat flaps: a node back from down three times.
	for i := 0; i < 3; i++ {
		for _, status := range []string{structs.NodeStatusDown, structs.NodeStatusReady} {
			var resp structs.NodeUpdateResponse
			if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID, Status: status}, &resp); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, 5*time.Second, func() string {
		if q := quarantineRow(t, st(), node.ID); q == nil || !q.Quarantined {
			return "flapping node not quarantined"
		}
		return ""
	})
	// node eligibility -enable clears it by hand.
	if err := s.RPC("Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{NodeID: node.ID, Eligibility: structs.NodeSchedulingEligible},
		&structs.NodeUpdateResponse{}); err != nil {
		t.Fatal(err)
	}
	if q := quarantineRow(t, st(), node.ID); q != nil {
		t.Fatalf("quarantine kept after a manual enable: %+v", q)
	}
}

// TestNodeQuarantineSurvivesFailover: a node quarantined by one leader
// stays quarantined when that leader dies, and the next leader re-probes
// it at the recorded time and lifts it.
func TestNodeQuarantineSurvivesFailover(t *testing.T) {
	const cooldown = 3 * time.Second
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.NodeQuarantine = server.NodeQuarantineConfig{Threshold: 3, Cooldown: cooldown}
	}))
	leader := c.WaitForLeader(t, 10*time.Second)
	node := mock.Node()
	registerNode(t, leader, node)
	for i := 0; i < 3; i++ {
		for _, status := range []string{structs.NodeStatusDown, structs.NodeStatusReady} {
			if err := leader.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID, Status: status},
				&structs.NodeUpdateResponse{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var q *structs.NodeQuarantine
	waitFor(t, 5*time.Second, func() string {
		if q = quarantineRow(t, leader.State(), node.ID); q == nil || !q.Quarantined {
			return "not quarantined"
		}
		return ""
	})
	c.Kill(c.Index(leader))
	next := c.WaitForLeader(t, 10*time.Second)
	// The new leader applies the entry (at the latest with its barrier).
	waitFor(t, 5*time.Second, func() string {
		if got := quarantineRow(t, next.State(), node.ID); got == nil || !got.Quarantined || !got.ProbeAt.Equal(q.ProbeAt) {
			return fmt.Sprintf("new leader's row %+v, want the quarantine probing at %v", got, q.ProbeAt)
		}
		return ""
	})
	waitFor(t, 3*cooldown+10*time.Second, func() string {
		n, err := next.State().NodeByID(nil, node.ID)
		if err != nil || n.SchedulingEligibility != structs.NodeSchedulingEligible {
			return "not lifted by the new leader"
		}
		return ""
	})
	if time.Now().Before(q.ProbeAt) {
		t.Fatalf("lifted before the recorded probe time %v", q.ProbeAt)
	}
	if ev := lastQuarantineEvent(next.State(), node.ID); ev != quarantine.EventLifted {
		t.Fatalf("lift event %q", ev)
	}
}
