package state

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/structs"
)

// StateStore holds the cluster state. It is safe for concurrent use: memdb
// serialises writers and readers never block.
type StateStore struct {
	db *memdb.MemDB

	// abandonCh is closed by Abandon; replacement is set just before.
	abandonCh   chan struct{}
	abandonOnce *sync.Once
	replacement *atomic.Pointer[StateStore]

	// nodeViews caches the NodeView; shared with every snapshot of the
	// store (see NodeView).
	nodeViews *nodeViewCache

	// allocWatches are the watches of allocation reads by key
	// (alloc_tables.go); nil on a snapshot.
	allocWatches *allocWatches
	// snapTables is, on a snapshot only, its allocations row: set when
	// the snapshot is taken and by each write to it, before that write
	// releases the writer lock (see StateStore.tables).
	snapTables *atomic.Pointer[allocTables]

	// jobVersions is how many versions of a job the job_version table
	// keeps (job_versions.go).
	jobVersions int
}

// StateSnapshot is a point-in-time, read-only view of a StateStore. Every
// read method of StateStore works on it. Writes to a snapshot change only
// the snapshot (the plan applier uses that to evaluate plans optimistically).
type StateSnapshot struct {
	*StateStore
}

// Option configures a new store.
type Option func(*StateStore)

// WithJobTrackedVersions sets how many versions of each job the store
// keeps (the current one included); n < 1 keeps the default,
// structs.JobTrackedVersions. Every server must use the same value: the
// versions dropped are part of the replicated state.
func WithJobTrackedVersions(n int) Option {
	return func(s *StateStore) {
		if n >= 1 {
			s.jobVersions = n
		}
	}
}

// NewStateStore returns an empty store.
func NewStateStore(opts ...Option) (*StateStore, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("state: creating memdb: %w", err)
	}
	s := &StateStore{
		db:           db,
		abandonCh:    make(chan struct{}),
		abandonOnce:  new(sync.Once),
		replacement:  new(atomic.Pointer[StateStore]),
		nodeViews:    new(nodeViewCache),
		allocWatches: new(allocWatches),
		jobVersions:  structs.JobTrackedVersions,
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// JobTrackedVersions is how many versions of each job the store keeps.
func (s *StateStore) JobTrackedVersions() int { return s.jobVersions }

// Snapshot returns a consistent view of the store in O(1). The snapshot
// shares the store's abandon channel.
func (s *StateStore) Snapshot() (*StateSnapshot, error) {
	db := s.db.Snapshot()
	t, _, err := allocTablesOf(db.Txn(false))
	if err != nil {
		return nil, err
	}
	snap := &StateStore{
		db:          db,
		abandonCh:   s.abandonCh,
		abandonOnce: s.abandonOnce,
		replacement: s.replacement,
		nodeViews:   s.nodeViews,
		snapTables:  new(atomic.Pointer[allocTables]),
		jobVersions: s.jobVersions,
	}
	snap.snapTables.Store(t)
	return &StateSnapshot{StateStore: snap}, nil
}

// AbandonCh is closed when an FSM restore replaces this store. Blocking
// queries watch it so they never wait on a store that no longer changes.
func (s *StateStore) AbandonCh() <-chan struct{} { return s.abandonCh }

// Abandon marks the store as replaced by replacement (which may be nil) and
// closes AbandonCh. Only the FSM calls it, after a successful restore. A
// second call does nothing.
func (s *StateStore) Abandon(replacement *StateStore) {
	s.abandonOnce.Do(func() {
		if replacement != nil {
			s.replacement.Store(replacement)
		}
		close(s.abandonCh)
	})
}

// current follows the chain of replacements to the live store.
func (s *StateStore) current() *StateStore {
	cur := s
	for {
		select {
		case <-cur.abandonCh:
			next := cur.replacement.Load()
			if next == nil {
				return cur
			}
			cur = next
		default:
			return cur
		}
	}
}

// Index returns the Raft index of the last write to table (0 if none).
func (s *StateStore) Index(table string) (uint64, error) {
	txn := s.db.Txn(false)
	raw, err := txn.First(TableIndex, IndexID, table)
	if err != nil {
		return 0, fmt.Errorf("state: index lookup %q: %w", table, err)
	}
	if raw == nil {
		return 0, nil
	}
	return raw.(*IndexEntry).Value, nil
}

// LatestIndex returns the highest index over all tables.
func (s *StateStore) LatestIndex() (uint64, error) {
	return latestIndexTxn(s.db.Txn(false))
}

// latestIndexTxn is LatestIndex of the state txn reads.
func latestIndexTxn(txn *memdb.Txn) (uint64, error) {
	iter, err := txn.Get(TableIndex, IndexID)
	if err != nil {
		return 0, fmt.Errorf("state: listing indexes: %w", err)
	}
	var latest uint64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		latest = max(latest, raw.(*IndexEntry).Value)
	}
	return latest, nil
}

// Indexes returns every row of the index table, sorted by table name.
func (s *StateStore) Indexes() ([]*IndexEntry, error) {
	txn := s.db.Txn(false)
	iter, err := txn.Get(TableIndex, IndexID)
	if err != nil {
		return nil, fmt.Errorf("state: listing indexes: %w", err)
	}
	var out []*IndexEntry
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*IndexEntry))
	}
	return out, nil
}

// listTxn collects every object of table idx matching args.
func listTxn[T any](txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) ([]*T, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: reading %s by %s: %w", table, index, err)
	}
	ws.Add(iter.WatchCh())
	var out []*T
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*T))
	}
	return out, nil
}

// firstTxn returns the one object of table matching args, or a not-found
// error naming kind and id.
func firstTxn[T any](txn *memdb.Txn, ws memdb.WatchSet, table, kind, id string, args ...any) (*T, error) {
	watchCh, raw, err := txn.FirstWatch(table, IndexID, args...)
	if err != nil {
		return nil, fmt.Errorf("state: %s lookup: %w", kind, err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, structs.NewError(structs.ErrCodeNotFound, "%s %q not found", kind, id)
	}
	return raw.(*T), nil
}

func defaultNamespace(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}
