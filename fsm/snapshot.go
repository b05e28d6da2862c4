package fsm

import (
	"errors"
	"hash/crc32"
	"io"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-metrics"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/state"
)

// Snapshot format, version 1:
//
//	header   msgpack snapshotHeader{Magic, FormatVersion, LastIndex}
//	frames   each: 4 bytes big-endian N > 0, then N bytes of msgpack
//	         values: the number of records in the frame, then per record
//	         its type (recIndex...recAlloc), for recAlloc the job number,
//	         and the object (structs.MsgpackHandle)
//	end      4 zero bytes, then 8 bytes big-endian: total number of records
//	trailer  4 bytes big-endian CRC-32 (Castagnoli) of everything before it
//
// Records come table by table: index, nodes, jobs, allocation-only jobs,
// job summaries, evaluations, allocations, then the other tables (ACLs,
// variables, services, job versions, scaling events, periodic launches,
// deployments). Jobs are numbered 1, 2, ... in
// the order they appear (recJob rows of the jobs table, then recAllocJob:
// job versions that allocations still run but the jobs table no longer
// holds). An allocation is written without its Job and with the number of
// the job object it points at (0: none), so a job shared by thousands of
// allocations is written once and shared again after a restore.
//
// Frames exist so that both sides can use every core: writers encode
// frames in parallel and write them in order; readers decode frames in
// parallel and insert them in order.
const (
	snapshotMagic         = "drover-snapshot"
	snapshotFormatVersion = 1
)

// Record types. Values stay below 128 so each is one msgpack byte.
const (
	recIndex byte = iota + 1
	recNode
	recJob
	recJobSummary
	recEval
	recAllocJob
	recAlloc
	recACLPolicy
	recACLToken
	recACLCluster
	recVariable
	recRootKeyMeta
	recServiceRegistration
	// recJobVersion is a kept job version (state's job_version table)
	// other than the current one: a recJob is its job's current version
	// too, so a job without history adds no record.
	recJobVersion
	// recScalingEvents is one job's kept scaling events.
	recScalingEvents
	recPeriodicLaunch
	// recSchedulerConfig is the scheduler configuration an operator set
	// (none while it is the default).
	recSchedulerConfig
	// recNodePool is a stored node pool (not the built-in ones).
	recNodePool
	// recDeployment is a deployment (state's deployment table).
	recDeployment
	// recNodeQuarantine is a node's faults and quarantine (state's
	// node_quarantine table).
	recNodeQuarantine
	// recPoolAutoscaler, recPoolInstance and recPoolAutoscaleStatus are
	// the autoscaling node pools' configurations, instances and statuses.
	recPoolAutoscaler
	recPoolInstance
	recPoolAutoscaleStatus
)

// maxFrameLen bounds one frame when reading, so a corrupt length cannot
// make the reader allocate without limit. Writers close a frame once it
// passes frameTargetLen, so only a single record larger than
// maxFrameLen-frameTargetLen could exceed it; no object is that large.
const (
	frameTargetLen = 1 << 20
	maxFrameLen    = 64 << 20
	frameHeaderLen = 4 + 5 // length, then the count as a msgpack uint32
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSnapshot is wrapped by every error ReadSnapshot returns for a
// snapshot that is truncated, altered or not a Drover snapshot.
var ErrCorruptSnapshot = errors.New("corrupt or truncated snapshot")

type snapshotHeader struct {
	Magic         string
	FormatVersion int
	LastIndex     uint64
}

// Snapshot captures the current state for Persist. It is O(1).
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.State().Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{snap: snap, logger: f.logger}, nil
}

type fsmSnapshot struct {
	snap   *state.StateSnapshot
	logger hclog.Logger
}

// Persist streams the snapshot to sink, closing it on success and
// cancelling it on error.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	defer metrics.MeasureSince(metricKey(metricPersist), time.Now())
	if err := WriteSnapshot(sink, s.snap); err != nil {
		s.logger.Error("persisting snapshot failed", "snapshot_id", sink.ID(), "error", err)
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release does nothing: a memdb snapshot needs no cleanup.
func (s *fsmSnapshot) Release() {}

// Restore replaces the state with the snapshot read from rc. The snapshot
// is loaded into a fresh store and fully verified first; on any error the
// current state is left untouched. On success the old store is abandoned,
// which wakes blocking queries so they answer from the new one at once.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer metrics.MeasureSince(metricKey(metricRestore), time.Now())
	defer rc.Close()
	store, err := readSnapshotDeferringGC(rc, f.restoreGCPercent, f.storeOpts...)
	if err != nil {
		f.logger.Error("restoring snapshot failed; state unchanged", "error", err)
		return err
	}
	old := f.state.Swap(store)
	old.Abandon(store)
	return nil
}

// readSnapshotDeferringGC is ReadSnapshot with the collector's target
// raised to percent (when that is a raise) until it returns. A restore
// builds a second store next to the live one, and nothing of the old
// store can be freed before the swap: a collection during the restore
// re-marks both stores (seconds of CPU at 100,000 jobs) to free only the
// decoder's scraps. With the target raised, the collection after the swap
// frees the old store in one pass. A memory limit (GOMEMLIMIT) still
// applies. The setting is process-wide: concurrent restores in one
// process (test clusters) leave it raised until the first one ends, and
// it is put back to what it was before.
func readSnapshotDeferringGC(r io.Reader, percent int, opts ...state.Option) (*state.StateStore, error) {
	if percent > 0 {
		prev := debug.SetGCPercent(percent)
		if prev < 0 || prev >= percent {
			debug.SetGCPercent(prev) // off, or already at least as high
		} else {
			defer debug.SetGCPercent(prev)
		}
	}
	return ReadSnapshot(r, opts...)
}

func crc32Update(crc uint32, p []byte) uint32 { return crc32.Update(crc, crcTable, p) }
