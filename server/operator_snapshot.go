package server

import (
	"bytes"
	"errors"
	"io"
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

// SnapshotUpload appends one chunk of an archive to restore to an upload
// on the leader (a new one when args.UploadID is empty), written to disk
// as it arrives (snapshot_uploads.go).
func (op *Operator) SnapshotUpload(args *structs.SnapshotUploadRequest, reply *structs.SnapshotUploadResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.SnapshotUpload", args, args, reply); done {
		return err
	}
	id, size, err := s.snapshotUploads.write(args, time.Now())
	if err != nil {
		return err
	}
	reply.UploadID, reply.Size = id, size
	return nil
}

// SnapshotRestore replaces the cluster's state with an uploaded archive
// (SnapshotUpload). The archive is verified completely (magic, SHA-256,
// every record, the stream's own checksum) before anything changes; a
// damaged one is refused with code invalid. The restore itself goes
// through raft.Restore on the leader, reading the upload's file: the
// leader's FSM restores it, and followers receive it as a Raft snapshot,
// so every server converges. Leader-only components then start again from
// the restored state. The upload is gone afterwards, restored or not.
func (op *Operator) SnapshotRestore(args *structs.SnapshotRestoreRequest, reply *structs.GenericResponse) error {
	s := op.srv
	if done, err := s.forward("Operator.SnapshotRestore", args, args, reply); done {
		return err
	}
	f, size, err := s.snapshotUploads.take(args.UploadID)
	if err != nil {
		return err
	}
	defer releaseUpload(f)
	meta, offset, err := fsm.VerifyArchiveAt(f, size)
	if err != nil {
		if errors.Is(err, fsm.ErrCorruptSnapshot) {
			return structs.NewError(structs.ErrCodeInvalid, "snapshot refused, nothing was changed: %v", err)
		}
		return diskError("reading the snapshot upload", err)
	}
	s.logger.Info("restoring operator snapshot", "snapshot_index", meta.Index, "bytes", meta.Size)
	raftMeta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: meta.Index, Size: meta.Size}
	if err := s.raft.Restore(raftMeta, io.NewSectionReader(f, offset, meta.Size), snapshotRestoreTimeout); err != nil {
		return raftError(err)
	}
	s.afterSnapshotRestore()
	reply.Index = s.raft.LastIndex()
	return nil
}
