package server

import (
	"errors"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/structs"
)

// A server whose disk fills cannot append to its Raft log: a leader steps
// down at the first failed write (hashicorp/raft), and no server whose
// disk is full can win an election. Callers would see "No cluster
// leader". diskWatch remembers the last write to raft.db that failed for
// lack of space (cleared by the next write that succeeds), so that the
// server answers disk_full, naming the cause, instead (forward, raftError).

// diskWatch is the state of this server's Raft log writes: the last
// write's disk-full error, nil after a good write. A good write costs one
// atomic load.
type diskWatch struct {
	err atomic.Pointer[error]
}

// isDiskFull reports whether err is the file system being out of space
// (or over quota).
func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// observe records the outcome of one write that appends to the Raft log:
// only such a write succeeding shows that the server can take writes
// again.
func (d *diskWatch) observe(err error) error {
	switch {
	case err == nil:
		if d.err.Load() != nil {
			d.err.Store(nil)
		}
	case isDiskFull(err):
		d.err.Store(&err)
	}
	return err
}

// observeOther records the failure of any other write (terms, votes,
// log compaction): a small write that succeeds on a page bolt freed says
// nothing of the next append, so it clears nothing. (While the log is
// full, a server steps down, wins an election on such writes, fails its
// first append and steps down again; requests that gave up in between
// were told "No cluster leader" instead of disk_full.)
func (d *diskWatch) observeOther(err error) error {
	if isDiskFull(err) {
		d.err.Store(&err)
	}
	return err
}

// full returns the disk-full error of the last write, if it failed so.
func (d *diskWatch) full() error {
	if p := d.err.Load(); p != nil {
		return *p
	}
	return nil
}

// diskFullError is the answer of a server whose Raft log cannot be
// written: code disk_full, with the write's error.
func diskFullError(cause error) error {
	return structs.NewError(structs.ErrCodeDiskFull,
		"No cluster leader: this server's disk is full, so it can neither lead nor accept writes (%v); free space in its data directory", cause)
}

// watchedLogStore is a raft.LogStore whose writes diskWatch observes.
type watchedLogStore struct {
	raft.LogStore
	w *diskWatch
}

func (s watchedLogStore) StoreLog(l *raft.Log) error { return s.w.observe(s.LogStore.StoreLog(l)) }
func (s watchedLogStore) StoreLogs(ls []*raft.Log) error {
	return s.w.observe(s.LogStore.StoreLogs(ls))
}
func (s watchedLogStore) DeleteRange(min, max uint64) error {
	return s.w.observeOther(s.LogStore.DeleteRange(min, max))
}

// watchedStableStore is a raft.StableStore (terms and votes) whose writes
// diskWatch observes.
type watchedStableStore struct {
	raft.StableStore
	w *diskWatch
}

func (s watchedStableStore) Set(k, v []byte) error { return s.w.observeOther(s.StableStore.Set(k, v)) }
func (s watchedStableStore) SetUint64(k []byte, v uint64) error {
	return s.w.observeOther(s.StableStore.SetUint64(k, v))
}
