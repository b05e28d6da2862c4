package state

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func nodeView(t *testing.T, s *StateStore) *NodeView {
	t.Helper()
	v, err := s.NodeView()
	must(t, err)
	return v
}

func snapView(t *testing.T, s *StateStore) *NodeView {
	t.Helper()
	snap, err := s.Snapshot()
	must(t, err)
	return nodeView(t, snap.StateStore)
}

// checkView compares v with the nodes table of s.
func checkView(t *testing.T, s *StateStore, v *NodeView) {
	t.Helper()
	nodes, err := s.Nodes(nil)
	must(t, err)
	if !slices.Equal(v.Nodes(), nodes) || v.Len() != len(nodes) {
		t.Fatalf("view holds %d nodes, table %d", v.Len(), len(nodes))
	}
	ready := map[string][]int32{}
	for i, n := range nodes {
		if p, ok := v.Position(n.ID); !ok || p != i || v.ByID(n.ID) != n || v.Node(i) != n {
			t.Fatalf("node %s: position %d/%v, want %d", n.ID, p, ok, i)
		}
		if n.Ready() {
			ready[n.Datacenter] = append(ready[n.Datacenter], int32(i))
		}
	}
	dcs := slices.Sorted(maps.Keys(ready))
	if !slices.Equal(v.ReadyDatacenters(), dcs) {
		t.Fatalf("ready datacenters %v, want %v", v.ReadyDatacenters(), dcs)
	}
	for _, dc := range dcs {
		if !slices.Equal(v.Ready(dc), ready[dc]) {
			t.Fatalf("ready in %s: %v, want %v", dc, v.Ready(dc), ready[dc])
		}
	}
	idx, err := s.Index(TableNodes)
	must(t, err)
	if v.Index() != idx {
		t.Fatalf("view index %d, table %d", v.Index(), idx)
	}
}

func TestNodeViewSharedUntilNodesChange(t *testing.T) {
	s := testStore(t)
	var ids []string
	for i := 0; i < 6; i++ {
		n := mock.Node()
		n.Datacenter = fmt.Sprintf("dc%d", i%2+1)
		ids = append(ids, n.ID)
		must(t, s.UpsertNode(uint64(10+i), n, nil))
	}
	v := snapView(t, s)
	checkView(t, s, v)
	if len(v.Ready("dc1")) != 3 || len(v.Ready("dc2")) != 3 {
		t.Fatalf("ready per dc: %v", v.ready)
	}

	// Writes to other tables keep the view.
	job := mock.Job()
	must(t, s.UpsertJob(20, job, mock.EvalFor(job)))
	node, err := s.NodeByID(nil, ids[0])
	must(t, err)
	must(t, s.UpsertAllocs(21, []*structs.Allocation{mock.Alloc(job, node)}))
	if again := snapView(t, s); again != v {
		t.Fatal("two snapshots without a node write got different views")
	}
	if fromStore := nodeView(t, s); fromStore != v {
		t.Fatal("the store and its snapshot got different views")
	}

	// Every node writer yields a new view with the change.
	writes := []struct {
		name  string
		write func(index uint64) error
	}{
		{"register", func(index uint64) error { return s.UpsertNode(index, mock.Node(), nil) }},
		{"re-register", func(index uint64) error {
			n := mock.Node()
			n.ID = ids[1]
			return s.UpsertNode(index, n, nil)
		}},
		{"status", func(index uint64) error {
			return s.UpdateNodeStatus(index, ids[2], structs.NodeStatusDown, 1, nil, nil)
		}},
		{"eligibility", func(index uint64) error {
			return s.UpdateNodeEligibility(index, &structs.NodeUpdateEligibilityRequest{NodeID: ids[3], Eligibility: structs.NodeSchedulingIneligible})
		}},
		{"drain", func(index uint64) error {
			return s.UpdateNodeDrain(index, &structs.NodeUpdateDrainRequest{NodeID: ids[4], DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}})
		}},
		{"delete", func(index uint64) error { return s.DeleteNodes(index, []string{ids[5]}) }},
	}
	prev := v
	for i, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			must(t, w.write(uint64(30+i)))
			got := snapView(t, s)
			if got == prev {
				t.Fatal("node write kept the old view")
			}
			checkView(t, s, got)
			prev = got
		})
	}
	if got := len(prev.Ready("dc1")) + len(prev.Ready("dc2")); got != 3 {
		t.Fatalf("ready nodes after status, eligibility, drain and delete: %d, want 3", got)
	}
}

func TestNodeViewOldSnapshot(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(10, mock.Node(), nil))
	old, err := s.Snapshot()
	must(t, err)
	must(t, s.UpsertNode(11, mock.Node(), nil))
	cur := nodeView(t, s)

	// An older snapshot gets its own version and does not evict the newer.
	ov := nodeView(t, old.StateStore)
	if ov == cur || ov.Len() != 1 || ov.Index() != 10 {
		t.Fatalf("old snapshot's view: %d nodes at %d", ov.Len(), ov.Index())
	}
	if nodeView(t, s) != cur {
		t.Fatal("an old snapshot evicted the current view")
	}

	// A snapshot written to sees its own nodes; the store keeps its view.
	snap, err := s.Snapshot()
	must(t, err)
	must(t, snap.UpsertNode(12, mock.Node(), nil))
	sv := nodeView(t, snap.StateStore)
	checkView(t, snap.StateStore, sv)
	if sv.Len() != 3 {
		t.Fatalf("written snapshot's view has %d nodes, want 3", sv.Len())
	}
	if v := nodeView(t, s); v.Len() != 2 {
		t.Fatalf("store's view has %d nodes after a snapshot write, want 2", v.Len())
	}
}

func TestNodeViewConcurrent(t *testing.T) {
	s := testStore(t)
	for i := 0; i < 20; i++ {
		must(t, s.UpsertNode(uint64(10+i), mock.Node(), nil))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				snap, err := s.Snapshot()
				if err != nil {
					errs <- err
					return
				}
				v, err := snap.NodeView()
				if err != nil {
					errs <- err
					return
				}
				nodes, _ := snap.Nodes(nil)
				if v.Len() != len(nodes) {
					errs <- fmt.Errorf("view has %d nodes, its snapshot %d", v.Len(), len(nodes))
					return
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		must(t, s.UpsertNode(uint64(100+i), mock.Node(), nil))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkView(t, s, nodeView(t, s))
}
