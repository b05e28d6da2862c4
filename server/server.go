package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/yamux"

	"github.com/drover-project/drover/fsm"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/server/blockedevals"
	"github.com/drover-project/drover/server/evalbroker"
	"github.com/drover-project/drover/server/heartbeat"
	"github.com/drover-project/drover/server/planqueue"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/quarantine"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/worker"
)

// Server is one Drover server. Create it with NewServer; stop it with
// Shutdown. All methods are safe for concurrent use.
type Server struct {
	config *Config
	logger hclog.Logger
	nodeID string

	listener net.Listener
	rpcAddr  string // advertised host:port, also the Raft address
	// remoteMethods serve calls from the wire, methods in-process ones
	// (RPC), by "Job.Register"; read-only after setup.
	remoteMethods map[string]*rpcMethod
	// aclOn is Config.ACLEnabled, read by the dispatchers (read-only
	// after setup); aclCache caches token resolutions (acl_resolve.go).
	aclOn       bool
	aclCache    aclCache
	methods     map[string]*rpcMethod
	rpcWorkers  *rpcWorkers
	yamuxConfig *yamux.Config
	pool        *pool.Pool
	// tls is the agent's TLS (nil: off); with tls.RPC() the RPC port
	// takes TLS connections only (listener.go).
	tls *tlsutil.Configurator

	// keystore holds this server's root keys' material (keystore.go);
	// keyFetchMu serialises fetches of a missing key (keyring.go).
	keystore   *keystore
	keyFetchMu sync.Mutex

	fsm           *fsm.FSM
	raft          *raft.Raft
	raftLayer     *raftLayer
	raftTransport *raft.NetworkTransport
	raftStore     *raftboltdb.BoltStore // nil when in memory
	hadState      bool                  // Raft had data when the server started

	leaderNotifyCh    chan bool
	leaderReady       atomic.Bool // barrier done: local state has every committed entry
	leaderEstablished atomic.Bool // leader hooks established
	reconcileCh       chan struct{}
	restoredCh        chan chan struct{} // a snapshot was restored: restart leader components, then close the channel
	verifier          *leaderVerifier

	members *memberTable

	// The scheduling pipeline. The broker, blocked evals, plan queue and
	// heartbeat timers exist on every server but are enabled only on the
	// leader (see builtinLeaderHooks); workers run everywhere.
	leaderHooks []LeaderHook // built-in hooks, then Config.LeaderHooks
	broker      *evalbroker.Broker
	blocked     *blockedevals.BlockedEvals
	planQueue   *planqueue.Queue
	heartbeats  *heartbeat.Heartbeater
	// nodePacer paces node-event evaluations per job (node_evals.go).
	nodePacer *nodeEvalPacer
	// evalFloor is the latest index in state when this leader restored
	// the pending evaluations: every delivery waits for it (node_evals.go).
	evalFloor    atomic.Uint64
	allocUpdates *groupCommit[allocBatch]
	// quarantine counts node faults and quarantines flaky nodes while
	// leading (wire_quarantine.go); nil when disabled.
	quarantine *quarantine.Watcher
	// serviceUpserts group-commits service registrations
	// (service_endpoint.go).
	serviceUpserts *groupCommit[[]*structs.ServiceRegistration]
	// placements counts the new allocations this server's plan applier
	// committed since the process started (queue_metrics.go).
	placements atomic.Uint64
	// snapshotUploads are operator snapshot uploads in progress, on
	// the leader (snapshot_uploads.go).
	snapshotUploads *snapshotUploads
	// disk remembers a Raft log write that failed for lack of space
	// (disk_watch.go).
	disk diskWatch
	// clusterSecretCache is the cluster secret as last read
	// (acl_resolve.go).
	clusterSecretCache atomic.Pointer[clusterSecretCache]
	workers            []*worker.Worker // fixed after start

	connsMu sync.Mutex
	conns   map[net.Conn]struct{} // accepted connections; nil once shut down; guarded by connsMu
	// rpcConns counts open connections per remote address (rpc_limits.go).
	rpcConns *connLimiter

	// leaderChange wakes requests waiting for a leader (see forward).
	leaderChange changeSignal
	// leaderEpoch is the forwarding context of the leader this server
	// follows (forward_health.go); nil while none is known to answer.
	leaderEpoch atomic.Pointer[leaderEpoch]
	// netFault is the fault gate of Config.NetworkFaults (nil: none).
	netFault *netFault
	// leaderSilence is raft's heartbeat timeout: a leader not heard from
	// for this long is presumed gone (forward_health.go).
	leaderSilence time.Duration

	shutdownMu     sync.Mutex
	shutdown       bool // guarded by shutdownMu
	shutdownCh     chan struct{}
	shutdownCtx    context.Context
	shutdownCancel context.CancelFunc
	wg             sync.WaitGroup
}

// NewServer starts a server: it opens the listener, starts Raft and the
// join loop, and returns once the server accepts connections. It does not
// wait for a leader. On error everything started is stopped again.
func NewServer(cfg *Config) (*Server, error) {
	if cfg == nil {
		return nil, errors.New("server: nil config")
	}
	if cfg.RPCPort < 0 || cfg.RPCPort > 65535 {
		return nil, fmt.Errorf("server: invalid RPC port %d", cfg.RPCPort)
	}
	if cfg.BootstrapExpect < 0 {
		return nil, fmt.Errorf("server: invalid bootstrap_expect %d", cfg.BootstrapExpect)
	}
	if cfg.NumSchedulers < -1 {
		return nil, fmt.Errorf("server: invalid num_schedulers %d", cfg.NumSchedulers)
	}
	config := cfg.withDefaults()
	nodeID, err := loadNodeID(config)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if config.Name == "" {
		config.Name = nodeID
	}
	logger := config.Logger.Named("server").With("server", config.Name)

	s := &Server{
		config:         config,
		logger:         logger,
		nodeID:         nodeID,
		leaderNotifyCh: make(chan bool, 8),
		reconcileCh:    make(chan struct{}, 1),
		restoredCh:     make(chan chan struct{}),
		members:        newMemberTable(),
		conns:          make(map[net.Conn]struct{}),
		rpcConns:       newConnLimiter(config.RPCMaxConnsPerClient),
		shutdownCh:     make(chan struct{}),
	}
	s.shutdownCtx, s.shutdownCancel = context.WithCancel(context.Background())
	if config.NetworkFaults {
		s.netFault = &netFault{}
	}
	s.verifier = &leaderVerifier{verify: s.verifyLeader}
	s.yamuxConfig = yamux.DefaultConfig()
	s.yamuxConfig.LogOutput = nil
	s.yamuxConfig.Logger = logger.Named("yamux").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})

	if err := s.start(); err != nil {
		s.Shutdown()
		return nil, err
	}
	return s, nil
}

// start brings up every component in dependency order.
func (s *Server) start() error {
	if err := s.newPipeline(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.allocUpdates = &groupCommit[allocBatch]{write: s.writeAllocBatch}
	s.snapshotUploads = newSnapshotUploads(s.config.DataDir)
	s.serviceUpserts = &groupCommit[[]*structs.ServiceRegistration]{write: s.writeServiceBatch}
	var err error
	if s.keystore, err = newKeystore(s.config.DataDir, s.logger.Named("keystore")); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.leaderHooks = append(s.builtinLeaderHooks(), s.config.LeaderHooks...)
	s.fsm, err = fsm.New(fsm.Config{Logger: s.logger, Hooks: &fsmHooks{s: s, next: s.config.FSMHooks},
		JobTrackedVersions: s.config.JobTrackedVersions})
	if err != nil {
		return fmt.Errorf("server: fsm: %w", err)
	}
	if err := s.setupRPC(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.tls = s.config.TLS
	poolCfg := pool.Config{Logger: s.logger, WrapConn: s.netFault.wrapFunc()}
	var raftTLS *tls.Config
	if s.tls.RPC() {
		poolCfg.TLS = s.tls.OutgoingRPC()
		raftTLS = s.tls.OutgoingRPC()
	}
	s.pool = pool.New(poolCfg)

	addr := net.JoinHostPort(s.config.BindAddr, strconv.Itoa(s.config.RPCPort))
	s.listener, err = net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	s.rpcAddr, err = s.config.advertiseAddr(s.listener.Addr())
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.logger = s.logger.With("addr", s.rpcAddr)
	s.raftLayer = newRaftLayer(s.rpcAddr, raftTLS, s.logger)
	s.raftLayer.wrap = s.netFault.wrapFunc()

	if err := s.setupRaft(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if s.config.BootstrapExpect == 1 && !s.hadState {
		if err := s.bootstrap([]*structs.ServerMember{{ID: s.nodeID, RPCAddr: s.rpcAddr}}); err != nil {
			return fmt.Errorf("server: bootstrap: %w", err)
		}
	}

	s.wg.Add(6)
	go s.replicateKeys()
	go s.listen()
	go s.monitorLeadership()
	go s.joinLoop()
	go s.watchLeaderChanges()
	go s.watchLeaderHealth()
	s.startWorkers()
	s.logger.Info("server started", "node_id", s.nodeID, "bootstrap_expect", s.config.BootstrapExpect,
		"had_state", s.hadState)
	return nil
}

// Shutdown stops the server: the join loop, Raft (waiting for it), the
// listener and every connection, the pool, and the Raft store. It is
// idempotent; only the first call does anything.
func (s *Server) Shutdown() error {
	s.shutdownMu.Lock()
	if s.shutdown {
		s.shutdownMu.Unlock()
		return nil
	}
	s.shutdown = true
	close(s.shutdownCh)
	s.shutdownCancel()
	s.shutdownMu.Unlock()
	if s.netFault != nil {
		s.netFault.set(faultNone)
	}

	s.logger.Info("shutting down")
	var errs []error
	if s.raft != nil {
		if err := s.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
		}
	}
	if s.raftTransport != nil {
		s.raftTransport.Close()
	}
	if s.raftLayer != nil {
		s.raftLayer.Close()
	}
	if s.listener != nil {
		s.listener.Close()
	}
	s.closeConns()
	if s.pool != nil {
		s.pool.Shutdown()
	}
	s.wg.Wait()
	if s.rpcWorkers != nil {
		s.rpcWorkers.stop()
	}
	if s.snapshotUploads != nil {
		s.snapshotUploads.closeAll()
	}
	if s.keystore != nil {
		s.keystore.close()
	}
	if s.raftStore != nil {
		if err := s.raftStore.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// isShutdown reports whether Shutdown has been called.
func (s *Server) isShutdown() bool {
	select {
	case <-s.shutdownCh:
		return true
	default:
		return false
	}
}

// IsLeader reports whether this server is the Raft leader.
func (s *Server) IsLeader() bool {
	return s.raft != nil && s.raft.State() == raft.Leader
}

// Leader returns the leader's RPC address, or "" when none is known.
func (s *Server) Leader() string {
	if s.raft == nil {
		return ""
	}
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// RPCAddr returns the address other servers and clients use for this one.
func (s *Server) RPCAddr() string { return s.rpcAddr }

// NodeID returns this server's Raft ID.
func (s *Server) NodeID() string { return s.nodeID }

// State returns the current state store. It changes when a snapshot is
// restored; long-lived readers should call State again (or watch
// AbandonCh).
func (s *Server) State() *state.StateStore { return s.fsm.State() }

// Raft exposes the Raft instance to leader hooks and tests.
func (s *Server) Raft() *raft.Raft { return s.raft }

// Logger returns the server's logger, for components running inside it.
func (s *Server) Logger() hclog.Logger { return s.logger }
