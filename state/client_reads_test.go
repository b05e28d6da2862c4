package state

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestClientReads checks the client's hot-path reads against the reads
// they stand for: ClientNode against NodeByID then NodeAllocIndex (same
// values; the watch of NodeAllocIndex, the node's row, which holds the
// node: see TestClientNodeWatch), ClientAllocIndexesOf against ClientAllocIndexes,
// AllocsByIDs against AllocByID per ID; one NodeKey is reused across the
// cases, as a pooled query reuses it.
func TestClientReads(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	withAllocs, empty := mock.Node(), mock.Node()
	must(t, s.UpsertNode(2, withAllocs, nil))
	must(t, s.UpsertNode(3, empty, nil))
	a1, a2 := mock.Alloc(job, withAllocs), mock.Alloc(job, withAllocs)
	must(t, s.UpsertAllocs(4, []*structs.Allocation{a1}))
	must(t, s.UpsertAllocs(5, []*structs.Allocation{a2}))
	// A deleted node that still holds an allocation keeps its allocation
	// row; ClientNode reports it not found, as NodeByID does.
	gone := mock.Node()
	must(t, s.UpsertNode(6, gone, nil))
	must(t, s.UpsertAllocs(7, []*structs.Allocation{mock.Alloc(job, gone)}))
	must(t, s.DeleteNodes(8, []string{gone.ID}))

	var k NodeKey
	cases := []struct {
		name   string
		nodeID string
	}{
		{"node with allocations", withAllocs.ID},
		{"node without allocations", empty.ID},
		{"deleted node with an allocation", gone.ID},
		{"unknown node", "no-such-node"},
		{"again the first node (key reused)", withAllocs.ID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k.Reset(tc.nodeID)
			defer k.Release()
			if k.ID() != tc.nodeID {
				t.Fatalf("ID() = %q, want %q", k.ID(), tc.nodeID)
			}
			wantWS := memdb.NewWatchSet()
			wantNode, wantErr := s.NodeByID(nil, tc.nodeID)
			wantIndex, err := s.NodeAllocIndex(wantWS, tc.nodeID)
			if err != nil {
				t.Fatal(err)
			}
			if wantErr != nil {
				wantIndex = 0
			}
			gotWS := memdb.NewWatchSet()
			node, index, err := s.ClientNode(gotWS, &k)
			switch {
			case wantErr != nil:
				if !errors.Is(err, structs.ErrNotFound) || err.Error() != wantErr.Error() {
					t.Fatalf("err = %v, want %v", err, wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case node != wantNode || index != wantIndex:
				t.Fatalf("ClientNode = %p at %d, want %p at %d", node, index, wantNode, wantIndex)
			}
			if !maps.Equal(gotWS, wantWS) {
				t.Fatalf("watches %v, want %v", gotWS, wantWS)
			}
			want, err := s.ClientAllocIndexes(tc.nodeID)
			if err != nil {
				t.Fatal(err)
			}
			var wantHigh uint64
			for _, a := range want {
				wantHigh = max(wantHigh, a.AllocModifyIndex)
			}
			for _, latest := range []bool{false, true} {
				got, high, err := s.ClientAllocIndexesOf(&k, latest)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) || high != wantHigh {
					t.Fatalf("ClientAllocIndexesOf(latest=%v) = %v (high %d), want %v (high %d)", latest, got, high, want, wantHigh)
				}
			}
		})
	}

	t.Run("read of the last ClientNode or of the latest state", func(t *testing.T) {
		k.Reset(withAllocs.ID)
		defer k.Release()
		if _, _, err := s.ClientNode(nil, &k); err != nil {
			t.Fatal(err)
		}
		a3 := mock.Alloc(job, withAllocs)
		must(t, s.UpsertAllocs(9, []*structs.Allocation{a3}))
		before := map[string]uint64{a1.ID: 4, a2.ID: 5}
		after := map[string]uint64{a1.ID: 4, a2.ID: 5, a3.ID: 9}
		if got, high, _ := s.ClientAllocIndexesOf(&k, false); !maps.Equal(got.Map(), before) || high != 5 {
			t.Fatalf("from the last read: %v (high %d), want %v (high 5)", got, high, before)
		}
		if got, high, _ := s.ClientAllocIndexesOf(&k, true); !maps.Equal(got.Map(), after) || high != 9 {
			t.Fatalf("latest: %v (high %d), want %v (high 9)", got, high, after)
		}
		k.Release()
		if got, _, _ := s.ClientAllocIndexesOf(&k, false); !maps.Equal(got.Map(), after) {
			t.Fatalf("after Release: %v, want the latest %v", got, after)
		}
	})

	t.Run("AllocsByIDs", func(t *testing.T) {
		ids := []string{a2.ID, "missing", a1.ID, a2.ID, ""}
		wantWS := memdb.NewWatchSet()
		var want []*structs.Allocation
		var wantHigh uint64
		for _, id := range ids {
			a, err := s.AllocByID(wantWS, id)
			if errors.Is(err, structs.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, a)
			wantHigh = max(wantHigh, a.ModifyIndex)
		}
		gotWS := memdb.NewWatchSet()
		prefix := []*structs.Allocation{nil}
		got, high, err := s.AllocsByIDs(gotWS, ids, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want)+1 || got[0] != nil || !slices.Equal(got[1:], want) || high != wantHigh {
			t.Fatalf("AllocsByIDs = %v (high %d), want nil then %v (high %d)", got, high, want, wantHigh)
		}
		if !maps.Equal(gotWS, wantWS) {
			t.Fatalf("watches %v, want %v", gotWS, wantWS)
		}
		if got, high, err := s.AllocsByIDs(nil, nil, nil); got != nil || high != 0 || err != nil {
			t.Fatalf("no IDs: %v, %d, %v", got, high, err)
		}
	})
}

// BenchmarkClientReadsState: one pass of a client's watch as the server
// runs it (ClientNode, then ClientAllocIndexesOf from the same read) on a
// node with 20 allocations, and the fetch of those 20 (AllocsByIDs).
//
//	go test -run '^$' -bench BenchmarkClientReadsState -benchmem ./state
func BenchmarkClientReadsState(b *testing.B) {
	s, err := NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	job := mock.Job()
	must(b, s.UpsertJob(1, job, nil))
	node := mock.Node()
	must(b, s.UpsertNode(2, node, nil))
	var allocs []*structs.Allocation
	var ids []string
	for range 20 {
		a := mock.Alloc(job, node)
		allocs = append(allocs, a)
		ids = append(ids, a.ID)
	}
	must(b, s.UpsertAllocs(3, allocs))
	b.Run("watch", func(b *testing.B) {
		b.ReportAllocs()
		ws := memdb.NewWatchSet()
		var k NodeKey
		for b.Loop() {
			clear(ws)
			k.Reset(node.ID)
			if _, _, err := s.ClientNode(ws, &k); err != nil {
				b.Fatal(err)
			}
			if out, _, err := s.ClientAllocIndexesOf(&k, false); err != nil || len(out) != 20 {
				b.Fatal(len(out), err)
			}
			k.Release()
		}
	})
	b.Run("fetch", func(b *testing.B) {
		b.ReportAllocs()
		ws := memdb.NewWatchSet()
		out := make([]*structs.Allocation, 0, len(ids))
		for b.Loop() {
			clear(ws)
			got, _, err := s.AllocsByIDs(ws, ids, out[:0])
			if err != nil || len(got) != 20 {
				b.Fatal(len(got), err)
			}
		}
	})
}

// TestClientNodeMissingAt: a lookup that finds no node records the latest
// index of the state it read (so a watch can tell "deleted" from "not here
// yet" about that very state), and a lookup that finds it records none.
func TestClientNodeMissingAt(t *testing.T) {
	s := testStore(t)
	node := mock.Node()
	var k NodeKey
	k.Reset(node.ID)
	must(t, s.UpsertJob(7, mock.Job(), nil))
	if _, _, err := s.ClientNode(nil, &k); !errors.Is(err, structs.ErrNotFound) || k.MissingAt() != 7 {
		t.Fatalf("missing node: err %v, MissingAt %d; want not found at 7", err, k.MissingAt())
	}
	must(t, s.UpsertNode(9, node, nil))
	if _, _, err := s.ClientNode(nil, &k); err != nil || k.MissingAt() != 0 {
		t.Fatalf("registered node: err %v, MissingAt %d; want found, 0", err, k.MissingAt())
	}
	k.Release()
	var empty NodeKey
	empty.Reset("nope")
	if _, _, err := testStore(t).ClientNode(nil, &empty); !errors.Is(err, structs.ErrNotFound) || empty.MissingAt() != 1 {
		t.Fatalf("empty store: err %v, MissingAt %d; want not found at 1 (never 0)", err, empty.MissingAt())
	}
}

// The watch ClientNode adds fires when the node is written or its
// allocation index moves, and, for a missing node, when it registers; not
// when another node changes.
func TestClientNodeWatch(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	node, other := mock.Node(), mock.Node()
	must(t, s.UpsertNode(2, node, nil))
	must(t, s.UpsertNode(3, other, nil))
	later := mock.Node()
	index := uint64(10)
	for _, tc := range []struct {
		name   string
		nodeID string
		write  func(index uint64)
		fires  bool
	}{
		{"another node's status", node.ID, func(i uint64) {
			must(t, s.UpdateNodeStatus(i, other.ID, structs.NodeStatusDown, 1, nil, nil))
		}, false},
		{"another node's allocation", node.ID, func(i uint64) {
			must(t, s.UpsertAllocs(i, []*structs.Allocation{mock.Alloc(job, other)}))
		}, false},
		{"the node's status", node.ID, func(i uint64) {
			must(t, s.UpdateNodeStatus(i, node.ID, structs.NodeStatusDown, 1, nil, nil))
		}, true},
		{"an allocation placed on the node", node.ID, func(i uint64) {
			must(t, s.UpsertAllocs(i, []*structs.Allocation{mock.Alloc(job, node)}))
		}, true},
		{"the node deleted", node.ID, func(i uint64) {
			must(t, s.DeleteNodes(i, []string{node.ID}))
		}, true},
		{"a missing node registers", later.ID, func(i uint64) {
			must(t, s.UpsertNode(i, later, nil))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k NodeKey
			k.Reset(tc.nodeID)
			defer k.Release()
			ws := memdb.NewWatchSet()
			before, _, beforeErr := s.ClientNode(ws, &k)
			tc.write(index)
			index++
			if got := fired(ws); got != tc.fires {
				t.Fatalf("the watch fired: %v, want %v", got, tc.fires)
			}
			after, _, afterErr := s.ClientNode(nil, &k)
			if !tc.fires && (after != before || (afterErr == nil) != (beforeErr == nil)) {
				t.Fatalf("the node changed (%p, %v -> %p, %v) and the watch did not fire", before, beforeErr, after, afterErr)
			}
		})
	}
}
