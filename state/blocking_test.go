package state

import (
	"context"
	"errors"
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
