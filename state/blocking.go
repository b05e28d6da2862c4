package state

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"
)

// QueryFn runs one read against s, adding what it read to ws, and returns
// the index of the data it read. It is called again each time the data may
// have changed, so it must overwrite (not append to) its results. ws is
// valid only during the call: fn must not keep it.
type QueryFn func(ws memdb.WatchSet, s *StateStore) (index uint64, err error)

// BlockingQuery runs fn against the live store. If minIndex is 0 or fn
// returns an index above minIndex it returns at once. Otherwise it waits
// until something fn read changes, the store is replaced by an FSM restore,
// or timeout passes, and runs fn again. After a restore it runs fn once on
// the replacement store and returns, whatever the index: the state may
// have gone back below minIndex, and the caller must hear of it now. It
// returns fn's error, ctx.Err() if ctx ends first, or nil when the data
// moved past minIndex, the store was replaced or the timeout expired; in
// every nil case the last run of fn has filled the caller's results. timeout <= 0 means
// no timeout; it counts from the call.
//
// Thousands of clients each hold one of these (Node.GetClientAllocs), so a
// pass costs no allocation of its own: the watch set is pooled and reused
// across passes, and the wait is one select over the watch channels, the
// deadline timer and ctx.Done(); the timer (pooled too) exists only once
// the query blocks, and ctx gets no child.
func (s *StateStore) BlockingQuery(ctx context.Context, minIndex uint64, timeout time.Duration, fn QueryFn) error {
	var start time.Time
	if minIndex > 0 && timeout > 0 {
		start = time.Now()
	}
	ws := getWatchSet()
	defer putWatchSet(ws)
	var timer *time.Timer // set once the query first blocks
	defer func() {
		if timer != nil {
			putTimer(timer)
		}
	}()
	store := s.current()
	for {
		clear(ws)
		ws.Add(store.AbandonCh())
		index, err := fn(ws, store)
		if err != nil {
			return err
		}
		if minIndex == 0 || index > minIndex {
			return nil
		}
		var expired <-chan time.Time
		if timeout > 0 {
			if timer == nil {
				left := timeout - time.Since(start)
				if left <= 0 {
					return nil // fn alone took the whole wait
				}
				timer = getTimer(left)
			}
			expired = timer.C
		}
		switch waitAny(ctx, ws, expired) {
		case waitTimedOut:
			return nil // the last results stand
		case waitCanceled:
			return ctx.Err()
		}
		if next := store.current(); next != store {
			// A restore replaced the state: answer from the new one at
			// once, whatever its index (it may well be below minIndex:
			// the state went back). A caller waiting for a change would
			// otherwise sit out its timeout, unaware that what it knows
			// is no longer the servers' state.
			clear(ws)
			ws.Add(next.AbandonCh())
			_, err := fn(ws, next)
			return err
		}
	}
}

// waitResult says what ended a wait.
type waitResult int

const (
	waitFired    waitResult = iota // a watch channel closed
	waitTimedOut                   // the deadline passed
	waitCanceled                   // ctx ended
)

// watchFewMax is how many watch channels waitAny selects on directly; a
// larger set is watched through memdb (a goroutine per 32 channels).
const watchFewMax = 6

// waitAny blocks until a channel of ws closes, expired delivers (a nil
// expired never does) or ctx ends.
func waitAny(ctx context.Context, ws memdb.WatchSet, expired <-chan time.Time) waitResult {
	if len(ws) > watchFewMax {
		return waitMany(ctx, ws, expired)
	}
	done := ctx.Done()
	var ch [watchFewMax]<-chan struct{} // nil entries never fire
	i := 0
	for c := range ws {
		ch[i] = c
		i++
	}
	select {
	case <-ch[0]:
	case <-ch[1]:
	case <-ch[2]:
	case <-ch[3]:
	case <-ch[4]:
	case <-ch[5]:
	case <-expired:
		return waitTimedOut
	case <-done:
		return waitCanceled
	}
	return waitFired
}

// waitMany is waitAny for a large watch set. It returns only once memdb's
// watcher is done with ws (the caller clears and reuses it).
func waitMany(ctx context.Context, ws memdb.WatchSet, expired <-chan time.Time) waitResult {
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	fired := ws.WatchCh(watchCtx)
	select {
	case err := <-fired:
		if err != nil {
			return waitCanceled // ctx ended: watchCtx is cancelled only here
		}
		return waitFired
	case <-expired:
		cancel()
		<-fired
		return waitTimedOut
	}
}

// watchSetPoolMax is the largest watch set put back in the pool: clearing
// a map costs its capacity, and big sets are rare.
const watchSetPoolMax = 64

var watchSets = sync.Pool{New: func() any { return memdb.NewWatchSet() }}

func getWatchSet() memdb.WatchSet { return watchSets.Get().(memdb.WatchSet) }

func putWatchSet(ws memdb.WatchSet) {
	if len(ws) > watchSetPoolMax {
		return
	}
	clear(ws)
	watchSets.Put(ws)
}

var timers sync.Pool // of *time.Timer, stopped

// getTimer returns a timer that fires after d.
func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// putTimer stops t and pools it with an empty channel (with Go 1.23+
// timers Stop alone ensures that; the drain covers asynctimerchan=1).
func putTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	timers.Put(t)
}
