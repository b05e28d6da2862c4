package structs

// SnapshotSaveResponse carries an operator snapshot archive (see
// fsm.WriteArchive) of the whole state, taken on the leader.
type SnapshotSaveResponse struct {
	Archive []byte
	QueryMeta
}

// SnapshotUploadChunkBytes bounds the data of one SnapshotUploadRequest.
const SnapshotUploadChunkBytes = 8 << 20

// SnapshotUploadRequest sends the leader one chunk of an operator snapshot
// archive to restore: UploadID "" starts an upload (Offset 0); later
// chunks name it and carry the next Offset (the bytes sent so far).
type SnapshotUploadRequest struct {
	UploadID string
	Offset   int64
	Data     []byte
	WriteRequest
}

// SnapshotUploadResponse names the upload and the bytes it holds.
type SnapshotUploadResponse struct {
	UploadID string
	Size     int64
	WriteMeta
}

// SnapshotRestoreRequest restores the uploaded archive UploadID into the
// cluster through Raft, so every server converges on it.
type SnapshotRestoreRequest struct {
	UploadID string
	WriteRequest
}
