package state

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// nodeQuery reads one node (it may be missing) and reports the nodes
// table index, recording each store it ran on.
func nodeQuery(id string, runs *[]*StateStore, found *bool) QueryFn {
	return func(ws memdb.WatchSet, s *StateStore) (uint64, error) {
		*runs = append(*runs, s)
		_, err := s.NodeByID(ws, id)
		*found = err == nil
		if err != nil && !errors.Is(err, structs.ErrNotFound) {
			return 0, err
		}
		return s.Index(TableNodes)
	}
}

func TestBlockingQuery(t *testing.T) {
	type result struct {
		err   error
		found bool
		runs  []*StateStore
	}
	cases := []struct {
		name     string
		minIndex uint64
		timeout  time.Duration
		// act runs while the query blocks; it returns the store the final
		// run must have used.
		act       func(t *testing.T, s *StateStore, node *structs.Node) *StateStore
		cancelCtx bool
		wantRuns  int
		wantFound bool
		wantErr   error
	}{
		{name: "no min index runs once", minIndex: 0, wantRuns: 1},
		{name: "index already past min", minIndex: 4, timeout: time.Minute, wantRuns: 1},
		{
			name: "wakes on write", minIndex: 5, timeout: time.Minute, wantRuns: 2, wantFound: true,
			act: func(t *testing.T, s *StateStore, node *structs.Node) *StateStore {
				must(t, s.UpsertNode(6, node, nil))
				return s
			},
		},
		{name: "times out without a write", minIndex: 5, timeout: 20 * time.Millisecond, wantRuns: 1},
		{name: "caller cancels", minIndex: 5, cancelCtx: true, wantRuns: 1, wantErr: context.Canceled},
		{
			name: "follows a restore", minIndex: 5, timeout: time.Minute, wantRuns: 2, wantFound: true,
			act: func(t *testing.T, s *StateStore, node *structs.Node) *StateStore {
				next := testStore(t)
				must(t, next.UpsertNode(9, node, nil))
				s.Abandon(next)
				return next
			},
		},
		{
			// The restored state is older than what the caller has seen:
			// it hears of it at once, not at its timeout.
			name: "answers a restore below min at once", minIndex: 5, timeout: time.Hour, wantRuns: 2, wantFound: true,
			act: func(t *testing.T, s *StateStore, node *structs.Node) *StateStore {
				next := testStore(t)
				must(t, next.UpsertNode(3, node, nil))
				s.Abandon(next)
				return next
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t)
			must(t, s.UpsertNode(5, mock.Node(), nil))
			node := mock.Node()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			var res result
			started := make(chan struct{}, 4)
			fn := nodeQuery(node.ID, &res.runs, &res.found)
			done := make(chan struct{})
			go func() {
				defer close(done)
				res.err = s.BlockingQuery(ctx, tc.minIndex, tc.timeout, func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
					idx, err := fn(ws, st)
					started <- struct{}{}
					return idx, err
				})
			}()
			<-started // the first run has registered its watches
			want := s
			switch {
			case tc.act != nil:
				want = tc.act(t, s, node)
			case tc.cancelCtx:
				cancel()
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("blocking query did not return")
			}
			if !errors.Is(res.err, tc.wantErr) || (tc.wantErr == nil && res.err != nil) {
				t.Fatalf("error %v, want %v", res.err, tc.wantErr)
			}
			if len(res.runs) != tc.wantRuns {
				t.Fatalf("fn ran %d times, want %d", len(res.runs), tc.wantRuns)
			}
			if res.found != tc.wantFound {
				t.Fatalf("found = %v, want %v", res.found, tc.wantFound)
			}
			if last := res.runs[len(res.runs)-1]; last != want {
				t.Fatal("last run used the wrong store")
			}
		})
	}
}

func TestBlockingQueryOnAbandonedStore(t *testing.T) {
	// A caller holding an already-replaced store is sent to the live one.
	old, next := testStore(t), testStore(t)
	old.Abandon(next)
	var ran *StateStore
	err := old.BlockingQuery(context.Background(), 0, 0, func(ws memdb.WatchSet, s *StateStore) (uint64, error) {
		ran = s
		return 1, nil
	})
	must(t, err)
	if ran != next {
		t.Fatal("query ran on the abandoned store")
	}
}

func TestBlockingQueryError(t *testing.T) {
	s := testStore(t)
	boom := errors.New("boom")
	err := s.BlockingQuery(context.Background(), 10, time.Minute, func(memdb.WatchSet, *StateStore) (uint64, error) {
		return 0, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want fn's error", err)
	}
}

// TestBlockingQueryWatchSetSizes runs the wake, timeout and cancel cases
// with few watch channels (one select) and with many (memdb's watcher).
func TestBlockingQueryWatchSetSizes(t *testing.T) {
	for _, nodes := range []int{1, watchFewMax + 4, 80} {
		for _, end := range []string{"write", "timeout", "cancel"} {
			t.Run(fmt.Sprintf("%d nodes %s", nodes, end), func(t *testing.T) {
				s := testStore(t)
				ids := make([]string, nodes)
				for i := range ids {
					n := mock.Node()
					ids[i] = n.ID
					must(t, s.UpsertNode(uint64(5+i), n, nil))
				}
				last := uint64(5 + nodes - 1)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				timeout := time.Minute
				if end == "timeout" {
					timeout = 30 * time.Millisecond
				}
				first := make(chan struct{})
				var runs int
				done := make(chan error, 1)
				go func() {
					done <- s.BlockingQuery(ctx, last, timeout, func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
						var index uint64
						for _, id := range ids {
							n, err := st.NodeByID(ws, id)
							if err != nil {
								return 0, err
							}
							index = max(index, n.ModifyIndex)
						}
						runs++
						if runs == 1 {
							close(first)
						}
						return index, nil
					})
				}()
				<-first
				wantRuns, wantErr := 1, error(nil)
				switch end {
				case "write":
					// The last node read: with many channels it is
					// in a later chunk than the first.
					n, err := s.NodeByID(nil, ids[len(ids)-1])
					must(t, err)
					c := n.Copy()
					c.Name = "renamed"
					must(t, s.UpsertNode(last+1, c, nil))
					wantRuns = 2
				case "cancel":
					cancel()
					wantErr = context.Canceled
				}
				select {
				case err := <-done:
					if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
						t.Fatalf("error %v, want %v", err, wantErr)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("blocking query did not return")
				}
				if runs != wantRuns {
					t.Fatalf("fn ran %d times, want %d", runs, wantRuns)
				}
			})
		}
	}
}

// TestBlockingQueryTimeoutSpansWakes: the timeout counts from the call, not
// from each wake, so a query woken more often than its timeout by changes
// that leave its index at minIndex still returns when the timeout passes.
func TestBlockingQueryTimeoutSpansWakes(t *testing.T) {
	s := testStore(t)
	node := mock.Node()
	must(t, s.UpsertNode(5, node, nil))
	const timeout = 150 * time.Millisecond
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for index := uint64(6); ; index++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			c := node.Copy()
			c.Name = fmt.Sprint("n", index)
			if err := s.UpsertNode(index, c, nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-writerDone }()

	var runs int
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- s.BlockingQuery(context.Background(), 1_000_000, timeout, func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
			runs++
			_, err := st.NodeByID(ws, node.ID)
			return 5, err // never past minIndex
		})
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the query never timed out: each wake restarted its timeout")
	}
	if elapsed := time.Since(start); elapsed < timeout {
		t.Fatalf("returned after %v, before its %v timeout", elapsed, timeout)
	}
	if runs < 2 {
		t.Fatalf("fn ran %d times; the writes should have woken it", runs)
	}
}

// TestBlockingQueryPooledTimers: consecutive queries reuse pooled timers
// and watch sets; each one still waits its own full timeout.
func TestBlockingQueryPooledTimers(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mock.Node(), nil))
	for i := range 5 {
		timeout := time.Duration(20+10*i) * time.Millisecond
		start := time.Now()
		err := s.BlockingQuery(context.Background(), 5, timeout, func(ws memdb.WatchSet, st *StateStore) (uint64, error) {
			if len(ws) != 1 {
				return 0, fmt.Errorf("pass starts with %d watches, want only the abandon channel", len(ws))
			}
			return st.Index(TableNodes)
		})
		must(t, err)
		if elapsed := time.Since(start); elapsed < timeout {
			t.Fatalf("query %d returned after %v, before its %v timeout", i, elapsed, timeout)
		}
	}
}

// BenchmarkBlockingQuery measures the query machinery alone, with a
// query that reads nothing from the store. "ready": the first pass is
// already past minIndex (Alloc.GetAllocs' usual case). "wake": the first
// pass blocks on a channel (plus the store's abandon channel), which the
// benchmark closes from another goroutine; the second pass answers.
//
//	go test -run '^$' -bench BenchmarkBlockingQuery -benchmem ./state
func BenchmarkBlockingQuery(b *testing.B) {
	s, err := NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("ready", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			err := s.BlockingQuery(ctx, 10, time.Minute, func(ws memdb.WatchSet, _ *StateStore) (uint64, error) {
				return 11, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wake", func(b *testing.B) {
		b.ReportAllocs()
		chans := make([]chan struct{}, b.N)
		for i := range chans {
			chans[i] = make(chan struct{})
		}
		blocked := make(chan struct{})
		done := make(chan error)
		b.ResetTimer()
		for i := range b.N {
			ch := chans[i]
			go func() {
				passes := 0
				done <- s.BlockingQuery(ctx, 10, time.Minute, func(ws memdb.WatchSet, _ *StateStore) (uint64, error) {
					passes++
					if passes == 1 {
						ws.Add(ch)
						blocked <- struct{}{}
						return 10, nil
					}
					return 11, nil
				})
			}()
			<-blocked
			close(ch)
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}
