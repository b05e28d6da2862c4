package state

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestNodePools: the built-in pools are always there and cannot be
// written or deleted; a pool is upserted (CreateIndex kept) and listed by
// prefix; a registering node creates its pool; a pool that a node or a job
// uses cannot be deleted, an unused one can.
func TestNodePools(t *testing.T) {
	s, err := NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	names := func(prefix string) []string {
		pools, err := s.NodePools(nil, prefix)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pools {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(""); len(got) != 2 || got[0] != "all" || got[1] != "default" {
		t.Fatalf("built-in pools: %v", got)
	}
	if err := s.UpsertNodePools(10, []*structs.NodePool{{Name: "default"}}); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("upsert default: %v", err)
	}
	if err := s.UpsertNodePools(11, []*structs.NodePool{{Name: "gpu", Description: "v1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertNodePools(12, []*structs.NodePool{{Name: "gpu", Description: "v2"}}); err != nil {
		t.Fatal(err)
	}
	p, err := s.NodePoolByName(nil, "gpu")
	if err != nil || p.Description != "v2" || p.CreateIndex != 11 || p.ModifyIndex != 12 {
		t.Fatalf("gpu: %+v %v", p, err)
	}
	if got := names("g"); len(got) != 1 || got[0] != "gpu" {
		t.Fatalf("prefix g: %v", got)
	}
	n := mock.Node()
	n.NodePool = "arm"
	if err := s.UpsertNode(13, n, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NodePoolByName(nil, "arm"); err != nil {
		t.Fatalf("a registering node creates its pool: %v", err)
	}
	if err := s.DeleteNodePools(14, []string{"arm"}); structs.CodeOf(err) != structs.ErrCodeConflict {
		t.Fatalf("delete a pool with a node: %v", err)
	}
	j := mock.Job()
	j.NodePool = "gpu"
	if err := s.UpsertJob(15, j, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNodePools(16, []string{"gpu"}); structs.CodeOf(err) != structs.ErrCodeConflict {
		t.Fatalf("delete a pool with a job: %v", err)
	}
	for _, name := range []string{"all", "default"} {
		if err := s.DeleteNodePools(17, []string{name}); structs.CodeOf(err) != structs.ErrCodeInvalid {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if err := s.DeleteNodePools(18, []string{"nope"}); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("delete a missing pool: %v", err)
	}
	if err := s.UpsertNodePools(19, []*structs.NodePool{{Name: "spare"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNodePools(20, []string{"spare"}); err != nil {
		t.Fatal(err)
	}
	if got := names(""); len(got) != 4 {
		t.Fatalf("pools after delete: %v", got)
	}
}

// TestNodeViewOnlyPool: the view names the pool every node is in, and
// none once two pools have nodes.
func TestNodeViewOnlyPool(t *testing.T) {
	s, err := NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	view := func() string {
		v, err := s.NodeView()
		if err != nil {
			t.Fatal(err)
		}
		return v.OnlyPool()
	}
	if p := view(); p != "" {
		t.Fatalf("no nodes: %q", p)
	}
	n := mock.Node()
	n.NodePool = ""
	if err := s.UpsertNode(10, n, nil); err != nil {
		t.Fatal(err)
	}
	if p := view(); p != structs.NodePoolDefault {
		t.Fatalf("one node without a pool: %q", p)
	}
	g := mock.Node()
	g.NodePool = "gpu"
	if err := s.UpsertNode(11, g, nil); err != nil {
		t.Fatal(err)
	}
	if p := view(); p != "" {
		t.Fatalf("two pools: %q", p)
	}
}
