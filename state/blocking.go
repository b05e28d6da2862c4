package state

import (
	"context"
	"time"

	"github.com/hashicorp/go-memdb"
)

// QueryFn runs one read against s, adding what it read to ws, and returns
// the index of the data it read. It is called again each time the data may
// have changed, so it must overwrite (not append to) its results.
type QueryFn func(ws memdb.WatchSet, s *StateStore) (index uint64, err error)

// BlockingQuery runs fn against the live store. If minIndex is 0 or fn
// returns an index above minIndex it returns at once. Otherwise it waits
// until something fn read changes, the store is replaced by an FSM restore,
// or timeout passes, and runs fn again (on the replacement store after a
// restore). It returns fn's error, ctx.Err() if ctx ends first, or nil when
// the data moved past minIndex or the timeout expired; in every nil case
// the last run of fn has filled the caller's results. timeout <= 0 means
// no timeout.
func (s *StateStore) BlockingQuery(ctx context.Context, minIndex uint64, timeout time.Duration, fn QueryFn) error {
	waitCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	store := s.current()
	for {
		ws := memdb.NewWatchSet()
		ws.Add(store.AbandonCh())
		index, err := fn(ws, store)
		if err != nil {
			return err
		}
		if minIndex == 0 || index > minIndex {
			return nil
		}
		if err := ws.WatchCtx(waitCtx); err != nil {
			// Either the caller's ctx ended (report it) or our timeout
			// passed (the last results stand).
			return ctx.Err()
		}
		store = store.current()
	}
}
