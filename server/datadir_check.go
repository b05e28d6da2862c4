package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/boltcheck"
)

// A server's data directory is read once, at start-up: <DataDir>/node-id,
// <DataDir>/raft/raft.db (bbolt) and <DataDir>/raft/snapshots/<id>/
// (meta.json, state.bin). A damaged file must stop the server with an
// error naming it, never crash it (bbolt reads past the end of a file cut
// short and dies with SIGBUS or an assertion panic) and never be skipped
// in silence (raft passes over a snapshot whose meta.json does not parse,
// and starts without the state it held).

// raft's FileSnapshotStore layout.
const (
	snapshotsDirName = "snapshots"
	snapshotMetaName = "meta.json"
	snapshotStateBin = "state.bin"
	snapshotTmp      = ".tmp" // a snapshot being written; raft removes it
)

// checkRaftDir checks raft.db's frame and every finished snapshot's
// meta.json and state.bin in dir (<DataDir>/raft), before raft opens
// them.
func checkRaftDir(dir string) error {
	if err := boltcheck.Check(filepath.Join(dir, raftDBName)); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, snapshotsDirName))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), snapshotTmp) {
			continue
		}
		if err := checkSnapshot(filepath.Join(dir, snapshotsDirName, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// checkSnapshot checks that a snapshot's meta.json parses and that
// state.bin has the size it records.
func checkSnapshot(dir string) error {
	metaPath := filepath.Join(dir, snapshotMetaName)
	buf, err := os.ReadFile(metaPath)
	if err != nil {
		return fmt.Errorf("raft snapshot %s: %w", dir, err)
	}
	var meta raft.SnapshotMeta
	if err := json.Unmarshal(buf, &meta); err != nil {
		return &boltcheck.DamagedError{Path: metaPath, Reason: fmt.Sprintf("it does not parse (%v)", err)}
	}
	if meta.Index == 0 || meta.Term == 0 {
		return &boltcheck.DamagedError{Path: metaPath, Reason: "it records no index or term"}
	}
	statePath := filepath.Join(dir, snapshotStateBin)
	st, err := os.Stat(statePath)
	if err != nil {
		return fmt.Errorf("raft snapshot %s: %w", dir, err)
	}
	if st.Size() != meta.Size {
		return &boltcheck.DamagedError{Path: statePath, Reason: fmt.Sprintf("it is %d bytes; its meta.json records %d", st.Size(), meta.Size)}
	}
	return nil
}

// isUUID reports whether s has the form structs.GenerateUUID writes
// (8-4-4-4-12 hexadecimal digits).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
			return false
		}
	}
	return true
}
