package server

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/boltcheck"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// copyDir copies the tree at src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDamagedDataDirIsAClearError: a server whose data directory has a
// file cut short refuses to start with an error naming the file, where
// bbolt would panic (raft.db) and raft would start without the state a
// snapshot held (meta.json).
func TestDamagedDataDirIsAClearError(t *testing.T) {
	base := t.TempDir()
	cfg := Config{Name: "d", NodeID: "", DataDir: base, BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, NumSchedulers: -1, RaftNoSync: true}
	s, err := NewServer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !s.IsLeader() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// Enough entries for raft.db to grow past its first megabyte.
	for range 400 {
		var resp structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	metas, _ := filepath.Glob(filepath.Join(base, "raft", "snapshots", "*", "meta.json"))
	if len(metas) != 1 {
		t.Fatalf("snapshots: %v", metas)
	}
	snapRel, _ := filepath.Rel(base, filepath.Dir(metas[0]))
	dbSize := func(dir string) int64 {
		st, err := os.Stat(filepath.Join(dir, "raft", "raft.db"))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}

	for _, tc := range []struct {
		name, file string // file relative to the data dir
		cut        func(dir string) int64
	}{
		{"raft.db cut in half", "raft/raft.db", func(dir string) int64 { return dbSize(dir) / 2 }},
		{"raft.db cut to one page", "raft/raft.db", func(string) int64 { return 4096 }},
		{"meta.json cut short", filepath.Join(snapRel, "meta.json"), func(string) int64 { return 10 }},
		{"state.bin cut short", filepath.Join(snapRel, "state.bin"), func(string) int64 { return 10 }},
		{"node-id cut short", "node-id", func(string) int64 { return 5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base, dir)
			path := filepath.Join(dir, tc.file)
			if err := os.Truncate(path, tc.cut(dir)); err != nil {
				t.Fatal(err)
			}
			c := cfg
			c.DataDir = dir
			s, err := NewServer(&c)
			if err == nil {
				s.Shutdown()
				t.Fatal("started with a damaged file")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "damaged") {
				t.Fatalf("error does not name %s as damaged: %v", path, err)
			}
			var de *boltcheck.DamagedError
			if tc.file != "node-id" && !errors.As(err, &de) {
				t.Fatalf("error is not a DamagedError: %v", err)
			}
		})
	}

	// The undamaged copy starts.
	s, err = NewServer(&cfg)
	if err != nil {
		t.Fatalf("the whole data dir: %v", err)
	}
	s.Shutdown()
}
