package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/drover-project/drover/structs"
)

const (
	raftDirName       = "raft"
	raftDBName        = "raft.db"
	nodeIDFileName    = "node-id"
	raftLogCacheSize  = 512
	raftSnapshotsKept = 2
	raftMaxPool       = 3
	raftNetTimeout    = 10 * time.Second
	// raftMaxRPCsInFlight 1 turns hashicorp/raft's pipelined replication
	// off: each AppendEntries to a follower waits for its answer. With
	// pipelining (v1.7.3, hashicorp/raft#612), a follower that refuses one
	// pipelined append (its log store failed, e.g. a full disk) can stop
	// the leader's replication to it for good: the pipeline's decoder
	// exits, and the sender, racing it, blocks on a send nobody receives.
	// Heartbeats go on, so the follower never calls an election and never
	// catches up until the leader changes (chaos disk-full seeds 202, 203).
	// On a LAN the pipeline gains little (raft#541).
	raftMaxRPCsInFlight = 1
)

// loadNodeID returns the configured node ID, else the one persisted in
// <DataDir>/node-id, else a new one (persisted when there is a DataDir), so
// a restarted server keeps its Raft identity.
func loadNodeID(cfg *Config) (string, error) {
	if cfg.NodeID != "" {
		return cfg.NodeID, nil
	}
	if cfg.DataDir == "" {
		return structs.GenerateUUID(), nil
	}
	path := filepath.Join(cfg.DataDir, nodeIDFileName)
	buf, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(buf))
		if id == "" {
			return "", fmt.Errorf("node ID file %s is empty", path)
		}
		// The file holds a UUID written by this function: anything else
		// is damage, and a changed ID would make this a new Raft server.
		if !isUUID(id) {
			return "", fmt.Errorf("node ID file %s is damaged: %q is not a UUID", path, id)
		}
		return id, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read node ID: %w", err)
	}
	id := structs.GenerateUUID()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write node ID: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write node ID: %w", err)
	}
	return id, nil
}

// raftConfig builds raft's configuration from ours.
func (s *Server) raftConfig() *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(s.nodeID)
	conf.Logger = s.logger.Named("raft")
	conf.NotifyCh = s.leaderNotifyCh
	// A removed server that is still alive is added back by the leader's
	// reconciliation; it must keep its Raft running to rejoin.
	conf.ShutdownOnRemove = false
	// Let raft gather concurrent applies into one log batch (one fsync).
	conf.BatchApplyCh = true
	// Labelled metrics only (raft otherwise emits every metric twice).
	conf.NoLegacyTelemetry = true
	scale := s.config.RaftTimeoutScale
	conf.HeartbeatTimeout = time.Duration(float64(conf.HeartbeatTimeout) * scale)
	conf.ElectionTimeout = time.Duration(float64(conf.ElectionTimeout) * scale)
	conf.LeaderLeaseTimeout = time.Duration(float64(conf.LeaderLeaseTimeout) * scale)
	s.leaderSilence = conf.HeartbeatTimeout
	if scale < 1 {
		conf.CommitTimeout = time.Duration(float64(conf.CommitTimeout) * scale)
		if conf.CommitTimeout < 5*time.Millisecond {
			conf.CommitTimeout = 5 * time.Millisecond
		}
	}
	return conf
}

// setupRaft opens the Raft stores and starts Raft. The transport uses the
// server's raftLayer, so Raft shares the RPC listener.
func (s *Server) setupRaft() error {
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  s.raftLayer,
		MaxPool: raftMaxPool,
		Timeout: raftNetTimeout,
		// No pipelined replication (see raftMaxRPCsInFlight).
		MaxRPCsInFlight: raftMaxRPCsInFlight,
		Logger:          s.logger.Named("raft_net"),
	})
	s.raftTransport = trans

	var (
		logStore    raft.LogStore
		stableStore raft.StableStore
		snapStore   raft.SnapshotStore
	)
	if s.config.DataDir == "" {
		mem := raft.NewInmemStore()
		logStore, stableStore = mem, mem
		snapStore = raft.NewInmemSnapshotStore()
	} else {
		dir := filepath.Join(s.config.DataDir, raftDirName)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create raft dir: %w", err)
		}
		if err := checkRaftDir(dir); err != nil {
			return fmt.Errorf("%w; restore the data directory from a backup, or move it aside to start this server empty (it then catches up from its peers)", err)
		}
		store, err := raftboltdb.New(raftboltdb.Options{
			Path:   filepath.Join(dir, raftDBName),
			NoSync: s.config.RaftNoSync,
			// The freelist is rebuilt on open instead of written on every
			// commit: fewer pages per log batch (as Nomad's no_freelist_sync).
			BoltOptions: &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
		})
		if err != nil {
			return fmt.Errorf("open raft log store: %w", err)
		}
		s.raftStore = store
		logStore = watchedLogStore{LogStore: store, w: &s.disk}
		stableStore = watchedStableStore{StableStore: store, w: &s.disk}
		snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, raftSnapshotsKept, s.logger.Named("raft_snapshots"))
		if err != nil {
			return fmt.Errorf("open raft snapshot store: %w", err)
		}
		snapStore = snaps
	}
	if s.netFault != nil {
		logStore = pausedLogStore{LogStore: logStore, f: s.netFault}
	}
	cache, err := raft.NewLogCache(raftLogCacheSize, logStore)
	if err != nil {
		return fmt.Errorf("raft log cache: %w", err)
	}

	hasState, err := raft.HasExistingState(cache, stableStore, snapStore)
	if err != nil {
		return fmt.Errorf("check raft state: %w", err)
	}
	s.hadState = hasState

	r, err := raft.NewRaft(s.raftConfig(), s.fsm, cache, stableStore, snapStore, trans)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	s.raft = r
	return nil
}

// bootstrap calls raft.BootstrapCluster with the given servers.
func (s *Server) bootstrap(members []*structs.ServerMember) error {
	var conf raft.Configuration
	for _, m := range members {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(m.ID),
			Address:  raft.ServerAddress(m.RPCAddr),
		})
	}
	s.logger.Info("bootstrapping cluster", "servers", len(conf.Servers))
	if s.config.OnBootstrap != nil {
		s.config.OnBootstrap()
	}
	if err := s.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return err
	}
	return nil
}

// raftApply writes one entry and waits for the FSM to apply it. It returns
// the entry's index and the FSM's response. A refused write (the FSM
// returned an error) comes back as that error; Raft failures are mapped to
// typed errors: structs.ErrNotLeader (nothing was written; safe to retry),
// structs.ErrShutdown, or an internal error when the outcome is unknown.
func (s *Server) raftApply(t structs.MessageType, msg any) (index uint64, resp any, err error) {
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return 0, nil, fmt.Errorf("encode %s: %w", t, err)
	}
	return s.raftApplyEncoded(buf)
}

// raftApplyEncoded is raftApply for an entry already encoded with
// structs.Encode.
func (s *Server) raftApplyEncoded(buf []byte) (index uint64, resp any, err error) {
	defer measureSince(metricRaftApply, time.Now())
	f := s.raft.Apply(buf, s.config.ApplyTimeout)
	if err := s.waitFuture(f); err != nil {
		return 0, nil, err
	}
	resp = f.Response()
	if rerr, ok := resp.(error); ok && rerr != nil {
		return f.Index(), nil, rerr
	}
	return f.Index(), resp, nil
}

// waitFuture waits for a raft future, or for shutdown: an apply or barrier
// still buffered in raft's apply channel (BatchApplyCh) when raft shuts
// down is never answered, and a caller waiting on it (the plan applier,
// the leader loop's barrier, both waited for by Shutdown) would hang the
// shutdown. Errors are mapped with raftError; a failure while this
// server's disk is full is disk_full.
func (s *Server) waitFuture(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		rerr := raftError(err)
		switch structs.CodeOf(rerr) {
		case structs.ErrCodeInternal, structs.ErrCodeNotLeader:
			// raft's log cache reports a failed append as text, and the
			// leader steps down after it (later writes are not_leader):
			// while the last write failed for lack of space, that is the
			// cause to report.
			if cause := s.disk.full(); cause != nil {
				return diskFullError(cause)
			}
		}
		return rerr
	case <-s.shutdownCh:
		return structs.ErrShutdown
	}
}

// raftError maps raft's errors to typed ones callers can test with errors.Is.
func raftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return structs.ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return structs.ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		// Not ErrNotLeader: that one promises nothing was written, so
		// callers may retry it; here the entry may still commit.
		return structs.NewError(structs.ErrCodeOutcomeUnknown, "leadership lost while committing; the write may or may not have been applied")
	case errors.Is(err, raft.ErrRaftShutdown):
		return structs.ErrShutdown
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return structs.NewError(structs.ErrCodeInternal, "timed out enqueuing the write")
	case isDiskFull(err):
		// The leader could not append the entry to its log and steps
		// down; nothing was committed.
		return diskFullError(err)
	}
	return structs.NewError(structs.ErrCodeInternal, "raft: %v", err)
}
