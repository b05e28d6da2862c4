package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// An archive restored in many small chunks is restored; the upload's file
// is gone afterwards, restored or refused.
func TestSnapshotRestoreInChunks(t *testing.T) {
	s := limitServer(t, Config{DataDir: t.TempDir(), BootstrapExpect: 1})
	waitFor(t, "leadership", s.IsLeader)
	for i := 0; i < 20; i++ {
		job := mock.Job()
		job.ID, job.Name = "snap-"+strconv.Itoa(i), "snap-"+strconv.Itoa(i)
		var resp structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	var saved structs.SnapshotSaveResponse
	if err := s.RPC("Operator.SnapshotSave", &structs.GenericRequest{}, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Archive) < 3000 {
		t.Fatalf("archive of %d bytes: too small to split", len(saved.Archive))
	}
	if _, err := restoreSnapshotChunks(s.RPC, bytes.NewReader(saved.Archive), structs.WriteRequest{}, 1000); err != nil {
		t.Fatal(err)
	}
	if n := len(s.snapshotUploads.ups); n != 0 {
		t.Fatalf("%d uploads left after the restore", n)
	}
	if left, _ := filepath.Glob(filepath.Join(s.snapshotUploads.dir, "*")); len(left) != 0 {
		t.Fatalf("upload files left: %v", left)
	}
	// A damaged archive in chunks is refused, and its file removed too.
	damaged := append([]byte(nil), saved.Archive...)
	damaged[len(damaged)-10] ^= 0xff
	if _, err := restoreSnapshotChunks(s.RPC, bytes.NewReader(damaged), structs.WriteRequest{}, 1000); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("damaged: err = %v, want code invalid", err)
	}
	if left, _ := filepath.Glob(filepath.Join(s.snapshotUploads.dir, "*")); len(left) != 0 {
		t.Fatalf("upload files left: %v", left)
	}
}

// The upload store's rules: chunks in order, bounded size and count,
// idle uploads dropped with their files.
func TestSnapshotUploadRules(t *testing.T) {
	u := newSnapshotUploads(t.TempDir())
	now := time.Unix(1700000000, 0)
	write := func(id string, off int64, data string) (string, int64, error) {
		return u.write(&structs.SnapshotUploadRequest{UploadID: id, Offset: off, Data: []byte(data)}, now)
	}
	id, size, err := write("", 0, "abc")
	if err != nil || size != 3 {
		t.Fatalf("first chunk: %q %d %v", id, size, err)
	}
	if _, _, err := write(id, 1, "x"); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("chunk at the wrong offset: %v", err)
	}
	if _, _, err := write("", 5, "x"); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("new upload not at 0: %v", err)
	}
	if _, _, err := write("nope", 0, "x"); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("unknown upload: %v", err)
	}
	big := make([]byte, structs.SnapshotUploadChunkBytes+1)
	if _, _, err := u.write(&structs.SnapshotUploadRequest{UploadID: id, Offset: 3, Data: big}, now); structs.CodeOf(err) != structs.ErrCodeTooLarge {
		t.Fatalf("oversized chunk: %v", err)
	}
	if _, size, err = write(id, 3, "def"); err != nil || size != 6 {
		t.Fatalf("second chunk: %d %v", size, err)
	}
	id2, _, err := write("", 0, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := write("", 0, "y"); structs.CodeOf(err) != structs.ErrCodeConflict {
		t.Fatalf("third upload at once: %v", err)
	}
	f, size, err := u.take(id)
	if err != nil || size != 6 {
		t.Fatalf("take: %d %v", size, err)
	}
	got, _ := os.ReadFile(f.Name())
	if string(got) != "abcdef" {
		t.Fatalf("upload holds %q", got)
	}
	releaseUpload(f)
	if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
		t.Fatalf("released upload's file still there: %v", err)
	}
	// Idle past the limit: the next call drops id2 and its file.
	now = now.Add(snapshotUploadIdle + time.Second)
	if _, _, err := write("", 0, "z"); err != nil {
		t.Fatal(err)
	}
	if _, ok := u.ups[id2]; ok {
		t.Fatal("idle upload not dropped")
	}
	if _, err := os.Stat(filepath.Join(u.dir, id2)); !os.IsNotExist(err) {
		t.Fatalf("idle upload's file still there: %v", err)
	}
	u.closeAll()
	if left, _ := filepath.Glob(filepath.Join(u.dir, "*")); len(left) != 0 {
		t.Fatalf("files left after closeAll: %v", left)
	}
}
