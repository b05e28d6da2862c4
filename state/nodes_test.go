package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestUpsertNode(t *testing.T) {
	s := testStore(t)
	node := mock.Node()
	node.Events = []*structs.NodeEvent{{Message: "Node registered", Subsystem: "Cluster"}}
	eval := mock.Eval()
	must(t, s.UpsertNode(5, node, []*structs.Evaluation{eval}))
	first, err := s.NodeByID(nil, node.ID)
	must(t, err)
	if first.CreateIndex != 5 || first.ModifyIndex != 5 || len(first.Events) != 1 || first.Events[0].CreateIndex != 5 {
		t.Fatalf("new node: %+v", first)
	}
	if _, err := s.EvalByID(nil, eval.ID); err != nil {
		t.Fatalf("eval not written with node: %v", err)
	}
	wantIndex(t, s, TableEvals, 5)

	// The operator drains the node; then the client re-registers with its
	// own idea of the server-owned fields.
	must(t, s.UpdateNodeDrain(6, &structs.NodeUpdateDrainRequest{NodeID: node.ID,
		DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}}))
	again := mock.Node()
	again.ID = node.ID
	again.Name = "renamed"
	again.Drain = false
	again.SchedulingEligibility = structs.NodeSchedulingEligible
	must(t, s.UpsertNode(8, again, nil))
	got, err := s.NodeByID(nil, node.ID)
	must(t, err)
	switch {
	case got.CreateIndex != 5 || got.ModifyIndex != 8:
		t.Fatalf("re-registered indexes create %d modify %d", got.CreateIndex, got.ModifyIndex)
	case got.Name != "renamed":
		t.Fatal("client-owned field not updated")
	case !got.Drain || got.DrainStrategy == nil || got.SchedulingEligibility != structs.NodeSchedulingIneligible:
		t.Fatalf("server-owned fields lost on re-register: drain=%v strategy=%v elig=%q",
			got.Drain, got.DrainStrategy, got.SchedulingEligibility)
	case len(got.Events) != 1:
		t.Fatalf("events not kept: %d", len(got.Events))
	}
	if first.Name == "renamed" || first.Drain {
		t.Fatal("node handed out earlier was modified")
	}
}

func TestUpdateNodeStatus(t *testing.T) {
	s := testStore(t)
	node := mock.Node()
	must(t, s.UpsertNode(5, node, nil))
	before, err := s.NodeByID(nil, node.ID)
	must(t, err)
	for i := 0; i < 15; i++ {
		ev := &structs.NodeEvent{Message: fmt.Sprintf("event %d", i), Subsystem: "Cluster"}
		must(t, s.UpdateNodeStatus(uint64(10+i), node.ID, structs.NodeStatusDown, int64(100+i), ev, nil))
	}
	eval := mock.Eval()
	must(t, s.UpdateNodeStatus(30, node.ID, structs.NodeStatusReady, 200, nil, []*structs.Evaluation{eval}))
	got, err := s.NodeByID(nil, node.ID)
	must(t, err)
	if got.Status != structs.NodeStatusReady || got.StatusUpdatedAt != 200 || got.ModifyIndex != 30 {
		t.Fatalf("status %q at %d index %d", got.Status, got.StatusUpdatedAt, got.ModifyIndex)
	}
	if len(got.Events) != MaxNodeEvents {
		t.Fatalf("%d events kept, want %d", len(got.Events), MaxNodeEvents)
	}
	if last := got.Events[len(got.Events)-1]; last.Message != "event 14" || last.CreateIndex != 24 {
		t.Fatalf("newest event %+v", last)
	}
	if before.Status != structs.NodeStatusReady || len(before.Events) != 0 {
		t.Fatal("node handed out earlier was modified")
	}
	if e, err := s.EvalByID(nil, eval.ID); err != nil || e.CreateIndex != 30 {
		t.Fatalf("eval with status update: %v %+v", err, e)
	}
	wantIndex(t, s, TableNodes, 30)
}

func TestUpdateNodeEligibilityAndDrain(t *testing.T) {
	type step struct {
		name    string
		apply   func(s *StateStore, id string) error
		wantErr structs.ErrorCode
		drain   bool
		elig    string
	}
	drain := func(strategy *structs.DrainStrategy, markEligible bool) func(*StateStore, string) error {
		return func(s *StateStore, id string) error {
			return s.UpdateNodeDrain(20, &structs.NodeUpdateDrainRequest{NodeID: id, DrainStrategy: strategy, MarkEligible: markEligible,
				NodeEvent: &structs.NodeEvent{Message: "drain"}})
		}
	}
	elig := func(e string) func(*StateStore, string) error {
		return func(s *StateStore, id string) error {
			return s.UpdateNodeEligibility(21, &structs.NodeUpdateEligibilityRequest{NodeID: id, Eligibility: e})
		}
	}
	steps := []step{
		{"ineligible", elig(structs.NodeSchedulingIneligible), "", false, structs.NodeSchedulingIneligible},
		{"eligible", elig(structs.NodeSchedulingEligible), "", false, structs.NodeSchedulingEligible},
		{"bogus", elig("maybe"), structs.ErrCodeInvalid, false, structs.NodeSchedulingEligible},
		{"start drain", drain(&structs.DrainStrategy{Deadline: time.Minute}, false), "", true, structs.NodeSchedulingIneligible},
		{"eligible while draining", elig(structs.NodeSchedulingEligible), structs.ErrCodeInvalid, true, structs.NodeSchedulingIneligible},
		{"stop drain", drain(nil, false), "", false, structs.NodeSchedulingIneligible},
		{"drain again", drain(&structs.DrainStrategy{}, false), "", true, structs.NodeSchedulingIneligible},
		{"stop drain, mark eligible", drain(nil, true), "", false, structs.NodeSchedulingEligible},
	}
	s := testStore(t)
	node := mock.Node()
	must(t, s.UpsertNode(5, node, nil))
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before, err := s.NodeByID(nil, node.ID)
			must(t, err)
			err = st.apply(s, node.ID)
			if structs.CodeOf(err) != st.wantErr {
				t.Fatalf("error %v, want code %q", err, st.wantErr)
			}
			got, err := s.NodeByID(nil, node.ID)
			must(t, err)
			if got.Drain != st.drain || got.SchedulingEligibility != st.elig || (got.DrainStrategy != nil) != st.drain {
				t.Fatalf("drain=%v strategy=%v elig=%q; want drain=%v elig=%q",
					got.Drain, got.DrainStrategy, got.SchedulingEligibility, st.drain, st.elig)
			}
			if st.wantErr != "" && got != before {
				t.Fatal("a refused update replaced the node")
			}
		})
	}
}

func TestDeleteNodes(t *testing.T) {
	s := testStore(t)
	a, b := mock.Node(), mock.Node()
	must(t, s.UpsertNode(5, a, nil))
	must(t, s.UpsertNode(6, b, nil))

	wantNotFound(t, s.DeleteNodes(7, []string{a.ID, "missing"}))
	if _, err := s.NodeByID(nil, a.ID); err != nil {
		t.Fatal("a failed delete removed a node")
	}
	must(t, s.DeleteNodes(8, []string{a.ID, b.ID}))
	nodes, err := s.Nodes(nil)
	must(t, err)
	if len(nodes) != 0 {
		t.Fatalf("%d nodes left", len(nodes))
	}
	wantIndex(t, s, TableNodes, 8)
}

func TestNodeListing(t *testing.T) {
	s := testStore(t)
	for i, id := range []string{"c-1", "a-1", "a-2", "b-1"} {
		n := mock.Node()
		n.ID = id
		must(t, s.UpsertNode(uint64(i+1), n, nil))
	}
	cases := []struct {
		prefix string
		want   []string
	}{{"", []string{"a-1", "a-2", "b-1", "c-1"}}, {"a", []string{"a-1", "a-2"}}, {"c-1", []string{"c-1"}}, {"d", nil}}
	for _, tc := range cases {
		t.Run("prefix "+tc.prefix, func(t *testing.T) {
			nodes, err := s.NodesByIDPrefix(nil, tc.prefix)
			must(t, err)
			var got []string
			for _, n := range nodes {
				got = append(got, n.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	all, err := s.Nodes(nil)
	must(t, err)
	if len(all) != 4 || all[0].ID != "a-1" || all[3].ID != "c-1" {
		t.Fatalf("Nodes not sorted by ID")
	}
}
