package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/drover-project/drover/structs"
)

// An operator snapshot restore arrives in chunks (Operator.SnapshotUpload,
// each at most structs.SnapshotUploadChunkBytes) that the leader appends
// to a file in <DataDir>/snapshot-uploads/; Operator.SnapshotRestore then
// verifies that file and hands it to Raft. No server holds a whole archive
// in memory, and no RPC message is larger than a chunk.
const (
	// maxSnapshotUploadBytes bounds one upload (the HTTP API's bound).
	maxSnapshotUploadBytes = 4 << 30
	// maxSnapshotUploads bounds the uploads in progress at once.
	maxSnapshotUploads = 2
	// snapshotUploadIdle is how long an upload may go without a chunk
	// before it is dropped (its file removed).
	snapshotUploadIdle = 2 * time.Minute
	// snapshotUploadDir is the uploads' directory under DataDir.
	snapshotUploadDir = "snapshot-uploads"
)

// snapshotUploads are the leader's uploads in progress, by ID.
type snapshotUploads struct {
	dir string // "" until first use: a directory of its own

	mu  sync.Mutex
	ups map[string]*snapshotUpload // guarded by mu
}

// snapshotUpload is one upload: its file and what it holds so far.
type snapshotUpload struct {
	f    *os.File
	size int64
	last time.Time
	busy bool // a chunk is being written or the restore has it
}

// newSnapshotUploads keeps uploads under dataDir (a temporary directory
// when the server has none), removing any left by an earlier run.
func newSnapshotUploads(dataDir string) *snapshotUploads {
	u := &snapshotUploads{ups: map[string]*snapshotUpload{}}
	if dataDir != "" {
		u.dir = filepath.Join(dataDir, snapshotUploadDir)
		os.RemoveAll(u.dir)
	}
	return u
}

// ensureDir makes the uploads' directory (a private one under the
// system's temporary directory when the server has no DataDir).
func (u *snapshotUploads) ensureDir() error {
	if u.dir == "" {
		d, err := os.MkdirTemp("", "drover-snapshot-uploads-")
		if err != nil {
			return err
		}
		u.dir = d
		return nil
	}
	return os.MkdirAll(u.dir, 0o700)
}

// reapLocked drops uploads idle since before cutoff.
func (u *snapshotUploads) reapLocked(cutoff time.Time) {
	for id, up := range u.ups {
		if !up.busy && up.last.Before(cutoff) {
			up.f.Close()
			os.Remove(up.f.Name())
			delete(u.ups, id)
		}
	}
}

// write appends a chunk to an upload (a new one when args.UploadID is
// empty) and returns the upload's ID and size.
func (u *snapshotUploads) write(args *structs.SnapshotUploadRequest, now time.Time) (string, int64, error) {
	if len(args.Data) > structs.SnapshotUploadChunkBytes {
		return "", 0, structs.NewError(structs.ErrCodeTooLarge, "snapshot chunk of %d bytes; the limit is %d", len(args.Data), structs.SnapshotUploadChunkBytes)
	}
	u.mu.Lock()
	u.reapLocked(now.Add(-snapshotUploadIdle))
	id := args.UploadID
	var up *snapshotUpload
	if id == "" {
		if args.Offset != 0 {
			u.mu.Unlock()
			return "", 0, structs.NewError(structs.ErrCodeInvalid, "a new snapshot upload starts at offset 0, not %d", args.Offset)
		}
		if len(u.ups) >= maxSnapshotUploads {
			u.mu.Unlock()
			return "", 0, structs.NewError(structs.ErrCodeConflict, "%d snapshot uploads are already in progress; try again later", len(u.ups))
		}
		if err := u.ensureDir(); err != nil {
			u.mu.Unlock()
			return "", 0, diskError("creating the snapshot upload directory", err)
		}
		var raw [16]byte
		rand.Read(raw[:])
		id = hex.EncodeToString(raw[:])
		f, err := os.OpenFile(filepath.Join(u.dir, id), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
		if err != nil {
			u.mu.Unlock()
			return "", 0, diskError("creating the snapshot upload file", err)
		}
		up = &snapshotUpload{f: f}
		u.ups[id] = up
	} else if up = u.ups[id]; up == nil || up.busy {
		u.mu.Unlock()
		return "", 0, structs.NewError(structs.ErrCodeNotFound, "snapshot upload %q not found or busy (it expired, or the leader changed): upload the snapshot again", id)
	}
	if args.Offset != up.size {
		size := up.size
		u.mu.Unlock()
		return "", 0, structs.NewError(structs.ErrCodeInvalid, "snapshot chunk at offset %d; the upload holds %d bytes", args.Offset, size)
	}
	if up.size+int64(len(args.Data)) > maxSnapshotUploadBytes {
		u.dropLocked(id)
		u.mu.Unlock()
		return "", 0, structs.NewError(structs.ErrCodeTooLarge, "snapshot larger than %d bytes", maxSnapshotUploadBytes)
	}
	up.busy = true
	u.mu.Unlock()

	_, err := up.f.Write(args.Data)

	u.mu.Lock()
	defer u.mu.Unlock()
	up.busy = false
	if err != nil {
		u.dropLocked(id)
		return "", 0, diskError("writing the snapshot upload", err)
	}
	up.size += int64(len(args.Data))
	up.last = now
	return id, up.size, nil
}

// take removes an upload from the table for its restore; the caller
// closes and removes its file with release.
func (u *snapshotUploads) take(id string) (*os.File, int64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	up := u.ups[id]
	if up == nil || up.busy {
		return nil, 0, structs.NewError(structs.ErrCodeNotFound, "snapshot upload %q not found or busy (it expired, or the leader changed): upload the snapshot again", id)
	}
	delete(u.ups, id)
	return up.f, up.size, nil
}

// dropLocked removes an upload and its file.
func (u *snapshotUploads) dropLocked(id string) {
	if up := u.ups[id]; up != nil {
		up.f.Close()
		os.Remove(up.f.Name())
		delete(u.ups, id)
	}
}

// closeAll drops every upload (server shutdown).
func (u *snapshotUploads) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id := range u.ups {
		u.dropLocked(id)
	}
}

// releaseUpload closes and removes a taken upload's file.
func releaseUpload(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// diskError is err from writing a server's disk, with code disk_full when
// the file system is out of space (or quota), internal otherwise.
func diskError(what string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return structs.NewError(structs.ErrCodeDiskFull, "%s: the server's disk is full: %v", what, err)
	}
	return structs.NewError(structs.ErrCodeInternal, "%s: %v", what, err)
}

// RestoreSnapshot sends the archive read from r to the leader in chunks
// through call (a server's or an RPC client's RPC method) and restores it,
// with wr's region and token on every call. It holds one chunk in memory
// at a time. An archive over the upload bound (4 GiB) is refused with
// code too_large.
func RestoreSnapshot(call func(method string, args, reply any) error, r io.Reader, wr structs.WriteRequest) (uint64, error) {
	return restoreSnapshotChunks(call, r, wr, structs.SnapshotUploadChunkBytes)
}

// restoreSnapshotChunks is RestoreSnapshot with chunks of chunk bytes.
func restoreSnapshotChunks(call func(method string, args, reply any) error, r io.Reader, wr structs.WriteRequest, chunk int) (uint64, error) {
	buf := make([]byte, chunk)
	var id string
	var offset int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 || offset == 0 {
			if n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
				return 0, structs.NewError(structs.ErrCodeInvalid, "the snapshot archive is empty")
			}
			args := &structs.SnapshotUploadRequest{UploadID: id, Offset: offset, Data: buf[:n], WriteRequest: wr}
			var reply structs.SnapshotUploadResponse
			if cerr := call("Operator.SnapshotUpload", args, &reply); cerr != nil {
				return 0, cerr
			}
			id, offset = reply.UploadID, reply.Size
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("reading the snapshot: %w", err)
		}
	}
	var reply structs.GenericResponse
	if err := call("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{UploadID: id, WriteRequest: wr}, &reply); err != nil {
		return 0, err
	}
	return reply.Index, nil
}
