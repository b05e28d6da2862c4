package structs

// SnapshotSaveResponse carries an operator snapshot archive (see
// fsm.WriteArchive) of the whole state, taken on the leader.
type SnapshotSaveResponse struct {
	Archive []byte
	QueryMeta
}

// SnapshotRestoreRequest restores an operator snapshot archive into the
// cluster through Raft, so every server converges on it.
type SnapshotRestoreRequest struct {
	Archive []byte
	WriteRequest
}
