package server

import (
	"bytes"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/fsm"
	"github.com/drover-project/drover/structs"
)

// snapshotRestoreTimeout bounds a restore through Raft.
const snapshotRestoreTimeout = 5 * time.Minute

// SnapshotSave returns an archive of the whole state, taken on the leader
// after it has confirmed it still leads (a consistent point in time).
func (op *Operator) SnapshotSave(args *structs.GenericRequest, reply *structs.SnapshotSaveResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.SnapshotSave", args, args, reply); done {
		return err
	}
	snap, err := s.State().Snapshot()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	meta, err := fsm.WriteArchive(&buf, snap, time.Now())
	if err != nil {
		return structs.NewError(structs.ErrCodeInternal, "writing snapshot: %v", err)
	}
	reply.Archive = buf.Bytes()
	reply.Index = meta.Index
	reply.KnownLeader = true
	return nil
}

// SnapshotRestore replaces the cluster's state with an archive. The archive
// is verified completely (magic, SHA-256, every record, the stream's own
// checksum) before anything changes; a damaged one is refused with code
// invalid. The restore itself goes through raft.Restore on the leader: the
// leader's FSM restores it, and followers receive it as a Raft snapshot, so
// every server converges. Leader-only components then start again from the
// restored state.
func (op *Operator) SnapshotRestore(args *structs.SnapshotRestoreRequest, reply *structs.GenericResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.SnapshotRestore", args, args, reply); done {
		return err
	}
	meta, body, _, err := fsm.VerifyArchive(bytes.NewReader(args.Archive))
	if err != nil {
		return structs.NewError(structs.ErrCodeInvalid, "snapshot refused, nothing was changed: %v", err)
	}
	s.logger.Info("restoring operator snapshot", "snapshot_index", meta.Index, "bytes", len(body))
	raftMeta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: meta.Index, Size: int64(len(body))}
	if err := s.raft.Restore(raftMeta, bytes.NewReader(body), snapshotRestoreTimeout); err != nil {
		return raftError(err)
	}
	s.afterSnapshotRestore()
	reply.Index = s.raft.LastIndex()
	return nil
}
