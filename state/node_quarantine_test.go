package state

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func quarantineReq(nodeID string, quarantined bool, faults int, elig string) *structs.NodeQuarantineUpdateRequest {
	q := &structs.NodeQuarantine{NodeID: nodeID, Quarantined: quarantined}
	for i := 0; i < faults; i++ {
		q.Faults = append(q.Faults, &structs.NodeFault{NodeID: nodeID, Kind: structs.NodeFaultSetup, Time: time.Unix(int64(100+i), 0)})
	}
	req := &structs.NodeQuarantineUpdateRequest{Quarantine: q, Eligibility: elig}
	if elig != "" {
		req.NodeEvent = &structs.NodeEvent{Message: "quarantine " + elig, Subsystem: "Quarantine"}
	}
	return req
}

func TestNodeQuarantineRows(t *testing.T) {
	s := testStore(t)
	node := mock.Node()
	must(t, s.UpsertNode(5, node, nil))

	// Faults below the threshold: a row, the node untouched.
	must(t, s.UpdateNodeQuarantine(6, quarantineReq(node.ID, false, 2, "")))
	q, err := s.NodeQuarantineByID(nil, node.ID)
	must(t, err)
	if len(q.Faults) != 2 || q.CreateIndex != 6 || q.ModifyIndex != 6 {
		t.Fatalf("row: %+v", q)
	}
	wantIndex(t, s, TableNodeQuarantine, 6)
	if n, _ := s.NodeByID(nil, node.ID); n.ModifyIndex != 5 {
		t.Fatalf("node written without an eligibility change: %d", n.ModifyIndex)
	}

	// The quarantine: the node ineligible with its event, in one write.
	must(t, s.UpdateNodeQuarantine(7, quarantineReq(node.ID, true, 3, structs.NodeSchedulingIneligible)))
	n, _ := s.NodeByID(nil, node.ID)
	q, _ = s.NodeQuarantineByID(nil, node.ID)
	if n.SchedulingEligibility != structs.NodeSchedulingIneligible || n.Events[len(n.Events)-1].Subsystem != "Quarantine" ||
		!q.Quarantined || q.CreateIndex != 6 || q.ModifyIndex != 7 {
		t.Fatalf("quarantine: node %+v row %+v", n, q)
	}

	// Lifted with no faults left: the row goes, the node is eligible.
	must(t, s.UpdateNodeQuarantine(8, quarantineReq(node.ID, false, 0, structs.NodeSchedulingEligible)))
	if _, err := s.NodeQuarantineByID(nil, node.ID); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("row kept after the lift: %v", err)
	}
	if n, _ := s.NodeByID(nil, node.ID); n.SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatal("node not eligible after the lift")
	}

	// A missing node is refused with not_found, nothing written.
	err = s.UpdateNodeQuarantine(9, quarantineReq("nope", true, 1, structs.NodeSchedulingIneligible))
	if !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("missing node: %v", err)
	}
}

// An operator's eligibility or drain change, and the node's
// deregistration, end its quarantine.
func TestNodeQuarantineClearedByOperator(t *testing.T) {
	for name, op := range map[string]func(s *StateStore, id string) error{
		"eligible": func(s *StateStore, id string) error {
			return s.UpdateNodeEligibility(20, &structs.NodeUpdateEligibilityRequest{NodeID: id, Eligibility: structs.NodeSchedulingEligible})
		},
		"ineligible": func(s *StateStore, id string) error {
			return s.UpdateNodeEligibility(20, &structs.NodeUpdateEligibilityRequest{NodeID: id, Eligibility: structs.NodeSchedulingIneligible})
		},
		"drain": func(s *StateStore, id string) error {
			return s.UpdateNodeDrain(20, &structs.NodeUpdateDrainRequest{NodeID: id, DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}})
		},
		"deregister": func(s *StateStore, id string) error { return s.DeleteNodes(20, []string{id}) },
	} {
		t.Run(name, func(t *testing.T) {
			s := testStore(t)
			node := mock.Node()
			must(t, s.UpsertNode(5, node, nil))
			must(t, s.UpdateNodeQuarantine(6, quarantineReq(node.ID, true, 3, structs.NodeSchedulingIneligible)))
			must(t, op(s, node.ID))
			if _, err := s.NodeQuarantineByID(nil, node.ID); !errors.Is(err, structs.ErrNotFound) {
				t.Fatalf("quarantine row kept: %v", err)
			}
			wantIndex(t, s, TableNodeQuarantine, 20)
		})
	}
}
