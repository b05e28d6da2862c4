package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// clientAllocsFixture is a store holding a node registered at index 10, a
// job at 11 and two of its allocations on the node placed at 12.
type clientAllocsFixture struct {
	st     *state.StateStore
	node   *structs.Node
	job    *structs.Job
	a1, a2 *structs.Allocation
}

func newClientAllocsFixture(t *testing.T) *clientAllocsFixture {
	t.Helper()
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	f := &clientAllocsFixture{st: st, node: mock.Node(), job: mock.Job()}
	if err := st.UpsertNode(10, f.node, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.UpsertJob(11, f.job, nil); err != nil {
		t.Fatal(err)
	}
	f.a1, f.a2 = mock.Alloc(f.job, f.node), mock.Alloc(f.job, f.node)
	if err := st.UpsertAllocs(12, []*structs.Allocation{f.a1, f.a2}); err != nil {
		t.Fatal(err)
	}
	return f
}

// queryOutcome is what one blocking run of a clientAllocsQuery returned.
type queryOutcome struct {
	index  uint64 // of the answer (of the last run, on an error)
	runs   int
	allocs structs.AllocIndexes
	err    error
}

// runClientAllocsQuery runs the query as GetClientAllocs does (blocking on
// minIndex for up to timeout) and calls write once, after the first run.
func runClientAllocsQuery(st *state.StateStore, q *clientAllocsQuery, timeout time.Duration, write func() error) queryOutcome {
	var out queryOutcome
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		out.err = st.BlockingQuery(context.Background(), q.minIndex, timeout, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
			idx, err := q.run(ws, st)
			out.index = idx
			out.runs++
			if out.runs == 1 {
				close(first)
			}
			return idx, err
		})
		if out.err == nil {
			out.allocs, out.index, out.err = q.result()
		}
	}()
	select {
	case <-first:
		if write != nil {
			if err := write(); err != nil {
				<-done
				out.err = errors.Join(errors.New("write failed"), err)
				return out
			}
		}
	case <-done:
	}
	<-done
	return out
}

// wakeWant is whether a write must wake a waiting query (run it again).
type wakeWant int

const (
	wakeMust  wakeWant = iota
	wakeNever          // the query must not run again before its timeout
)

// TestClientAllocsQueryAnswersServerChanges: the watch answers (index
// above MinQueryIndex) for every change the servers make to an allocation
// on the node, and keeps waiting (same index at the timeout) for client
// updates, node status changes, collections and other nodes' allocations,
// of which only the node's own changes and client updates that change its
// usage (an allocation turning terminal) wake it; a deleted node ends it.
func TestClientAllocsQueryAnswersServerChanges(t *testing.T) {
	const (
		wait  = 100 * time.Millisecond // for the cases that must time out
		never = 20 * time.Second       // for the cases that must answer
	)
	cases := []struct {
		name string
		// setup, if set, writes at index 12, before the query starts.
		setup func(f *clientAllocsFixture) error
		write func(f *clientAllocsFixture) error
		// answer: the query must return index 13 before its timeout;
		// else it must time out at 12 after being woken.
		answer   bool
		notFound bool
		wake     wakeWant
		want     func(f *clientAllocsFixture) map[string]uint64
	}{
		{
			name: "client status update",
			write: func(f *clientAllocsFixture) error {
				upd := &structs.Allocation{ID: f.a1.ID, ClientStatus: structs.AllocClientStatusRunning, ClientDescription: "running"}
				return f.st.UpdateAllocsFromClient(13, []*structs.Allocation{upd}, nil)
			},
			wake: wakeNever,
			want: func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 12, f.a2.ID: 12} },
		},
		{
			// The node's usage changes: the watch wakes, finds the same
			// index, and waits on.
			name: "client marks an allocation failed",
			write: func(f *clientAllocsFixture) error {
				upd := &structs.Allocation{ID: f.a1.ID, ClientStatus: structs.AllocClientStatusFailed, ClientDescription: "exit 1"}
				return f.st.UpdateAllocsFromClient(13, []*structs.Allocation{upd}, nil)
			},
			wake: wakeMust,
			want: func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 12, f.a2.ID: 12} },
		},
		{
			name: "node status change",
			write: func(f *clientAllocsFixture) error {
				return f.st.UpdateNodeStatus(13, f.node.ID, structs.NodeStatusDown, 1, nil, nil)
			},
			want: func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 12, f.a2.ID: 12} },
		},
		{
			// The garbage collector deletes terminal allocations only.
			name: "allocation collected (seen at the timeout)",
			setup: func(f *clientAllocsFixture) error {
				upd := &structs.Allocation{ID: f.a2.ID, ClientStatus: structs.AllocClientStatusComplete}
				return f.st.UpdateAllocsFromClient(12, []*structs.Allocation{upd}, nil)
			},
			write: func(f *clientAllocsFixture) error {
				return f.st.DeleteEvalsAndAllocs(13, nil, []string{f.a2.ID})
			},
			// The node's row lists its allocations, so the collection
			// wakes the query, which finds the index where it was (a1
			// holds the same AllocModifyIndex) and waits again.
			wake: wakeMust,
			want: func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 12} },
		},
		{
			name: "another node's allocation",
			write: func(f *clientAllocsFixture) error {
				return f.st.UpsertAllocs(13, []*structs.Allocation{mock.Alloc(f.job, mock.Node())})
			},
			wake: wakeNever,
			want: func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 12, f.a2.ID: 12} },
		},
		{
			name: "desired status stop",
			write: func(f *clientAllocsFixture) error {
				stop := &structs.Allocation{ID: f.a1.ID, DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "job stopped"}
				return f.st.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{stop}})
			},
			answer: true,
			want:   func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 13, f.a2.ID: 12} },
		},
		{
			name: "eviction",
			write: func(f *clientAllocsFixture) error {
				evict := &structs.Allocation{ID: f.a2.ID, DesiredStatus: structs.AllocDesiredStatusEvict, DesiredDescription: "preempted"}
				return f.st.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{evict}})
			},
			answer: true,
			want:   func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 12, f.a2.ID: 13} },
		},
		{
			name: "in-place update",
			write: func(f *clientAllocsFixture) error {
				return f.st.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{f.a1.Copy()}})
			},
			answer: true,
			want:   func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 13, f.a2.ID: 12} },
		},
		{
			name: "new placement",
			write: func(f *clientAllocsFixture) error {
				a3 := mock.Alloc(f.job, f.node)
				a3.ID = "a3"
				return f.st.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a3}})
			},
			answer: true,
			want: func(f *clientAllocsFixture) map[string]uint64 {
				return map[string]uint64{f.a1.ID: 12, f.a2.ID: 12, "a3": 13}
			},
		},
		{
			name: "desired transition",
			write: func(f *clientAllocsFixture) error {
				migrate := true
				return f.st.UpdateAllocsDesiredTransition(13, map[string]*structs.DesiredTransition{f.a2.ID: {Migrate: &migrate}}, 1, nil)
			},
			answer: true,
			want:   func(f *clientAllocsFixture) map[string]uint64 { return map[string]uint64{f.a1.ID: 12, f.a2.ID: 13} },
		},
		{
			name:     "node deleted",
			write:    func(f *clientAllocsFixture) error { return f.st.DeleteNodes(13, []string{f.node.ID}) },
			answer:   true,
			notFound: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newClientAllocsFixture(t)
			if tc.setup != nil {
				if err := tc.setup(f); err != nil {
					t.Fatal(err)
				}
			}
			q := getClientAllocsQuery(f.node.ID, f.node.SecretID, 12)
			timeout := wait
			if tc.answer {
				timeout = never
			}
			start := time.Now()
			out := runClientAllocsQuery(f.st, q, timeout, func() error { return tc.write(f) })
			elapsed := time.Since(start)
			if tc.notFound {
				if !errors.Is(out.err, structs.ErrNotFound) {
					t.Fatalf("err = %v, want not found", out.err)
				}
				if elapsed >= timeout {
					t.Fatalf("ended after %v, at the timeout", elapsed)
				}
				return
			}
			if out.err != nil {
				t.Fatal(out.err)
			}
			switch {
			case tc.wake == wakeMust && out.runs < 2:
				t.Fatalf("the query ran %d times: the write did not wake it", out.runs)
			case tc.wake == wakeNever && out.runs != 1:
				t.Fatalf("the query ran %d times: the write woke it", out.runs)
			}
			switch {
			case tc.answer && (out.index != 13 || elapsed >= timeout):
				t.Fatalf("index %d after %v, want an answer at 13", out.index, elapsed)
			case !tc.answer && (out.index != 12 || elapsed < timeout):
				t.Fatalf("index %d after %v, want the timeout (%v) at 12", out.index, elapsed, timeout)
			}
			if want := tc.want(f); !maps.Equal(out.allocs.Map(), want) {
				t.Fatalf("allocs = %v, want %v", out.allocs, want)
			}
		})
	}
}

// TestClientAllocsQueryNodeIndex: the reply index is at least the node's
// CreateIndex, and a server that has not yet seen the node's registration
// (a stale read on a lagging follower) waits for it instead of answering
// "not found"; a server past the caller's index reports a missing node.
func TestClientAllocsQueryNodeIndex(t *testing.T) {
	// A store at index 5: another node at 3, a job at 4, an allocation on
	// the other node at 5. The watched node is registered at 10 (by a
	// write the test makes, when the case needs it).
	newStore := func(t *testing.T) (*state.StateStore, *structs.Node, *structs.Job) {
		t.Helper()
		st, err := state.NewStateStore()
		if err != nil {
			t.Fatal(err)
		}
		other, job := mock.Node(), mock.Job()
		if err := st.UpsertNode(3, other, nil); err != nil {
			t.Fatal(err)
		}
		if err := st.UpsertJob(4, job, nil); err != nil {
			t.Fatal(err)
		}
		if err := st.UpsertAllocs(5, []*structs.Allocation{mock.Alloc(job, other)}); err != nil {
			t.Fatal(err)
		}
		return st, mock.Node(), job
	}

	t.Run("no allocations: the node's CreateIndex", func(t *testing.T) {
		st, node, _ := newStore(t)
		if err := st.UpsertNode(10, node, nil); err != nil {
			t.Fatal(err)
		}
		q := getClientAllocsQuery(node.ID, node.SecretID, 0)
		out := runClientAllocsQuery(st, q, 0, nil)
		if out.err != nil || out.index != 10 || len(out.allocs) != 0 {
			t.Fatalf("index %d allocs %v err %v, want index 10 and no allocations", out.index, out.allocs, out.err)
		}
	})
	t.Run("lagging server waits for the registration", func(t *testing.T) {
		st, node, job := newStore(t)
		q := getClientAllocsQuery(node.ID, node.SecretID, 10)
		var placed *structs.Allocation
		out := runClientAllocsQuery(st, q, 20*time.Second, func() error {
			// The follower catches up: the registration, then a placement.
			if err := st.UpsertNode(10, node, nil); err != nil {
				return err
			}
			placed = mock.Alloc(job, node)
			return st.UpsertAllocs(11, []*structs.Allocation{placed})
		})
		if out.err != nil {
			t.Fatalf("err = %v, want the placement", out.err)
		}
		if want := map[string]uint64{placed.ID: 11}; out.index != 11 || !maps.Equal(out.allocs.Map(), want) {
			t.Fatalf("index %d allocs %v, want 11 and %v", out.index, out.allocs, want)
		}
	})
	t.Run("lagging server that never sees the node", func(t *testing.T) {
		st, node, _ := newStore(t)
		q := getClientAllocsQuery(node.ID, "", 10)
		out := runClientAllocsQuery(st, q, 50*time.Millisecond, nil)
		if !errors.Is(out.err, structs.ErrNotFound) {
			t.Fatalf("err = %v (allocs %v), want not found at the timeout, never an empty answer", out.err, out.allocs)
		}
	})
	t.Run("server past the caller's index", func(t *testing.T) {
		st, node, _ := newStore(t)
		q := getClientAllocsQuery(node.ID, "", 4)
		out := runClientAllocsQuery(st, q, 20*time.Second, nil)
		if !errors.Is(out.err, structs.ErrNotFound) || out.runs != 1 {
			t.Fatalf("err = %v after %d runs, want not found at once", out.err, out.runs)
		}
	})
	t.Run("secret mismatch", func(t *testing.T) {
		st, node, _ := newStore(t)
		if err := st.UpsertNode(10, node, nil); err != nil {
			t.Fatal(err)
		}
		q := getClientAllocsQuery(node.ID, "wrong", 0)
		out := runClientAllocsQuery(st, q, 0, nil)
		if structs.CodeOf(out.err) != structs.ErrCodePermissionDenied {
			t.Fatalf("err = %v, want permission_denied", out.err)
		}
	})
}

// TestGetClientAllocsRPC drives the watch through the endpoint on a
// single server without workers (allocations are written by plan entries
// the test makes): a node without allocations answers at least its
// CreateIndex; a client status update (Node.UpdateAlloc) does not answer
// the blocking query, which times out at the same index; a placement and a
// stop answer it at once; deleting the node ends it with not found.
func TestGetClientAllocsRPC(t *testing.T) {
	s, err := NewServer(&Config{
		Name: "watch", BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond, NumSchedulers: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	dgWait(t, 10*time.Second, func() string {
		if !s.IsLeader() || !s.leaderEstablished.Load() {
			return "not leading yet"
		}
		return ""
	})
	st := s.State()

	// A job first, so the allocs table index predates the node.
	job := mock.Job()
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	stored, err := st.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: stored, AllocsUpdated: []*structs.Allocation{mock.Alloc(stored, mock.Node())}}); err != nil {
		t.Fatal(err)
	}
	node := mock.Node()
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &structs.NodeUpdateResponse{}); err != nil {
		t.Fatal(err)
	}
	registered, err := st.NodeByID(nil, node.ID)
	if err != nil {
		t.Fatal(err)
	}

	type answer struct {
		resp    structs.NodeClientAllocsResponse
		err     error
		elapsed time.Duration
	}
	watch := func(minIndex uint64, maxWait time.Duration) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			args := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID,
				QueryOptions: structs.QueryOptions{MinQueryIndex: minIndex, MaxQueryTime: maxWait}}
			var a answer
			start := time.Now()
			a.err = s.RPC("Node.GetClientAllocs", args, &a.resp)
			a.elapsed = time.Since(start)
			ch <- a
		}()
		return ch
	}
	get := func(ch <-chan answer) answer {
		t.Helper()
		select {
		case a := <-ch:
			return a
		case <-time.After(15 * time.Second):
			t.Fatal("the query did not return")
			return answer{}
		}
	}
	place := func() (*structs.Allocation, uint64) {
		t.Helper()
		a := mock.Alloc(stored, node)
		index, _, err := s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
			Job: stored, AllocsUpdated: []*structs.Allocation{a}})
		if err != nil {
			t.Fatal(err)
		}
		return a, index
	}

	first := get(watch(0, 0))
	allocsIndex, _ := st.Index(state.TableAllocs)
	if first.err != nil || first.resp.Index < registered.CreateIndex || len(first.resp.Allocs) != 0 {
		t.Fatalf("node without allocations: index %d allocs %v err %v, want index >= CreateIndex %d (allocs table %d)",
			first.resp.Index, first.resp.Allocs, first.err, registered.CreateIndex, allocsIndex)
	}

	// A placement answers a waiting query at once.
	pending := watch(first.resp.Index, 10*time.Second)
	a1, placedAt := place()
	got := get(pending)
	if got.err != nil || got.resp.Index != placedAt || !slices.Equal(got.resp.Allocs, structs.AllocIndexes{{ID: a1.ID, AllocModifyIndex: placedAt}}) {
		t.Fatalf("after a placement at %d: %+v, %v", placedAt, got.resp, got.err)
	}

	// A client update does not: the query times out with the same index.
	const short = 200 * time.Millisecond
	pending = watch(placedAt, short)
	upd := &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: a1.ID, ClientStatus: structs.AllocClientStatusRunning}},
		NodeSecrets: map[string]string{node.ID: node.SecretID}}
	var updResp structs.GenericResponse
	if err := s.RPC("Node.UpdateAlloc", upd, &updResp); err != nil {
		t.Fatal(err)
	}
	got = get(pending)
	if got.err != nil || got.resp.Index != placedAt || got.elapsed < short {
		t.Fatalf("after a client update at %d: index %d (want %d) after %v (want >= %v), err %v",
			updResp.Index, got.resp.Index, placedAt, got.elapsed, short, got.err)
	}
	if stored, err := st.AllocByID(nil, a1.ID); err != nil || stored.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("the client update was not applied: %v", err)
	}

	// A stop answers at once.
	pending = watch(placedAt, 10*time.Second)
	stop := &structs.Allocation{ID: a1.ID, DesiredStatus: structs.AllocDesiredStatusStop}
	stopAt, _, err := s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{stop}})
	if err != nil {
		t.Fatal(err)
	}
	got = get(pending)
	if got.err != nil || got.resp.Index != stopAt || !slices.Equal(got.resp.Allocs, structs.AllocIndexes{{ID: a1.ID, AllocModifyIndex: stopAt}}) {
		t.Fatalf("after a stop at %d: %+v, %v", stopAt, got.resp, got.err)
	}

	// Deleting the node ends the query.
	pending = watch(stopAt, 10*time.Second)
	if _, _, err := s.raftApply(structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{node.ID}}); err != nil {
		t.Fatal(err)
	}
	if got = get(pending); !errors.Is(got.err, structs.ErrNotFound) || got.elapsed > 5*time.Second {
		t.Fatalf("after the node was deleted: err %v after %v, want not found at once", got.err, got.elapsed)
	}
}
