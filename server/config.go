package server

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/fsm"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/server/autoscaler"
	"github.com/drover-project/drover/worker"
)

// Defaults for Config fields left zero.
const (
	DefaultRPCPort         = 4647
	DefaultRetryInterval   = 2 * time.Second
	DefaultNoLeaderTimeout = 5 * time.Second
	DefaultApplyTimeout    = 30 * time.Second
	DefaultMaxQueryTime    = 5 * time.Minute
	MaxMaxQueryTime        = 10 * time.Minute
	// DefaultHeartbeatMinTTL, DefaultHeartbeatGrace and
	// DefaultFailoverHeartbeatTTL are Nomad's node liveness defaults.
	DefaultHeartbeatMinTTL      = 10 * time.Second
	DefaultHeartbeatGrace       = 10 * time.Second
	DefaultFailoverHeartbeatTTL = 5 * time.Minute
	// DefaultNodeEvalWindow is the pace of node-event evaluations per job.
	DefaultNodeEvalWindow = time.Second
	// DefaultLeaderWorkerFraction is the share of scheduler workers left
	// running on the leader (at least one), which is busy applying plans.
	DefaultLeaderWorkerFraction = 0.25
	// DefaultFailedEvalFollowupDelay is the base wait of the follow-up
	// evaluation created for one that reached the delivery limit; up to as
	// much again is added at random.
	DefaultFailedEvalFollowupDelay = time.Minute
)

// Config configures one server. Zero values take the defaults above; only
// DataDir and BindAddr/RPCPort usually need setting.
type Config struct {
	Name       string // human name; default: the node ID
	NodeID     string // Raft server ID; default: read from or written to <DataDir>/node-id
	Region     string // default "global"
	Datacenter string // default "dc1"

	// DataDir holds <DataDir>/node-id and <DataDir>/raft/ (raft.db and
	// snapshots). Empty keeps everything in memory (dev mode, tests).
	DataDir string

	// BindAddr and RPCPort name the single TCP listener. RPCPort 0 picks a
	// free port (tests); RPCAddr reports the real address. RPCPort -1 is
	// not valid; use 0.
	BindAddr string
	RPCPort  int
	// RPCMaxConnsPerClient bounds the connections one IP address may hold
	// open on the RPC port (Nomad's limits.rpc_max_conns_per_client); a
	// connection beyond it is closed at once. 0 means
	// DefaultRPCMaxConnsPerClient; negative means no limit.
	RPCMaxConnsPerClient int
	// RPCHandshakeTimeout bounds how long a new connection may take to
	// send its protocol byte and, for RPC, its first yamux frame (Nomad's
	// limits.rpc_handshake_timeout). 0 means DefaultRPCHandshakeTimeout.
	RPCHandshakeTimeout time.Duration
	// RPCMaxMessageBytes bounds one RPC request header or body; a longer
	// one is refused and its stream closed. 0 means
	// DefaultRPCMaxMessageBytes.
	RPCMaxMessageBytes int
	// AdvertiseAddr is the host:port other servers and clients use; default
	// the bound address, with 127.0.0.1 in place of an unspecified IP.
	AdvertiseAddr string

	// BootstrapExpect is how many servers form the first Raft
	// configuration. 1 bootstraps alone at once (dev mode); 0 never
	// bootstraps (the server waits to be added by a leader).
	BootstrapExpect int
	// RetryJoin lists addresses of other servers to announce to.
	RetryJoin []string
	// RetryInterval is the period of the announce loop.
	RetryInterval time.Duration

	// NumSchedulers is the number of scheduler workers; 0 means
	// runtime.NumCPU() and -1 none (tests that play the worker).
	NumSchedulers int
	// JobTrackedVersions is how many versions of each job the state keeps
	// (fsm.Config.JobTrackedVersions); 0 means structs.JobTrackedVersions.
	// Every server of a cluster must use the same value.
	JobTrackedVersions int
	// LeaderWorkerFraction is the share of workers kept running while this
	// server leads (the rest pause, since the leader also applies plans);
	// at least one always runs. 0 means DefaultLeaderWorkerFraction; 1 or
	// more keeps every worker running.
	LeaderWorkerFraction float64
	// WorkerConfig, if set, adjusts each worker's configuration before it
	// starts (tests shorten timings).
	WorkerConfig func(*worker.Config)

	// EvalNackTimeout, EvalDeliveryLimit, EvalInitialNackDelay and
	// EvalSubsequentNackDelay tune the eval broker; zero takes the broker's
	// defaults (60 s, 3, 1 s, 20 s).
	EvalNackTimeout         time.Duration
	EvalDeliveryLimit       int
	EvalInitialNackDelay    time.Duration
	EvalSubsequentNackDelay time.Duration
	// FailedEvalFollowupDelay is the base wait of the follow-up evaluation
	// created when an evaluation reaches the delivery limit.
	FailedEvalFollowupDelay time.Duration

	// DrainGC tunes the leader's node drainer and garbage collector.
	DrainGC DrainGCConfig
	// NodeQuarantine tunes the flaky-node quarantine (wire_quarantine.go,
	// the agent's server { node_quarantine { ... } } block).
	NodeQuarantine NodeQuarantineConfig

	Logger hclog.Logger

	// TLS is the agent's tls block, loaded (nil: TLS off). With rpc on,
	// the RPC port (RPC and Raft) takes TLS connections only, and this
	// server's own connections to others are TLS; with
	// verify_server_hostname, peers get what their certificate's role
	// allows (rpc_roles.go).
	TLS *tlsutil.Configurator
	// ACLEnabled turns on ACL enforcement (agent config acl { enabled }):
	// every RPC method is checked against its rule (rpc_acl.go). Off,
	// nothing is checked and no token is read.
	ACLEnabled bool
	// ACLTokenMinExpirationTTL and ACLTokenMaxExpirationTTL bound the
	// lifetime of a new token with an expiration (Nomad's
	// token_min_expiration_ttl and token_max_expiration_ttl); 0 means
	// DefaultACLTokenMinExpirationTTL and DefaultACLTokenMaxExpirationTTL.
	ACLTokenMinExpirationTTL time.Duration
	ACLTokenMaxExpirationTTL time.Duration
	// ACLClusterSecretGrace is how long the cluster secret a rotation
	// replaced stays accepted; 0 means a minute (tests shorten it).
	ACLClusterSecretGrace time.Duration

	// RaftTimeoutScale multiplies raft's heartbeat, election and leader
	// lease timeouts. 0 means 1. Tests use e.g. 0.1 to elect in well under
	// a second on loopback.
	RaftTimeoutScale float64
	// NetworkFaults puts every connection of the server behind a fault
	// gate, so that a test can pause or partition it (PauseNetwork,
	// PartitionNetwork). For tests only.
	NetworkFaults bool
	// RaftNoSync skips fsync in the Raft log store. Unsafe; for tests and
	// benchmarks that measure everything but the disk.
	RaftNoSync bool

	// NoLeaderTimeout bounds how long a request waits for a leader before
	// failing with structs.ErrNoLeader.
	NoLeaderTimeout time.Duration
	// ApplyTimeout bounds raft.Apply enqueueing.
	ApplyTimeout time.Duration
	// HeartbeatMinTTL is the shortest heartbeat TTL handed to nodes; the
	// TTL grows with the cluster so that the leader sees about
	// HeartbeatMaxPerSecond heartbeats per second.
	HeartbeatMinTTL       time.Duration
	HeartbeatMaxPerSecond float64
	// HeartbeatGrace is added to a node's TTL before it is marked down.
	HeartbeatGrace time.Duration
	// FailoverHeartbeatTTL is the TTL every node gets when a server gains
	// leadership, so clients have time to find the new leader.
	FailoverHeartbeatTTL time.Duration
	// HeartbeatTTL is the former name of HeartbeatMinTTL, used when that
	// is zero.
	HeartbeatTTL time.Duration
	// NodeEvalWindow paces the evaluations node events create (a node
	// joining, going down or up, becoming eligible): a job gets at most
	// one such evaluation per window, later events being absorbed by it;
	// the window doubles, up to four times this, while the job's events
	// keep coming (node_evals.go). 0 means DefaultNodeEvalWindow.
	NodeEvalWindow time.Duration

	// JobGaugeInterval is how often the leader emits the job summary and
	// job status gauges (metrics_gauges.go). 0 means
	// DefaultJobGaugeInterval.
	JobGaugeInterval time.Duration

	// AutoscaleProviders are the providers autoscaled node pools may
	// name (server { autoscale_provider "<name>" { ... } }); nil: none.
	AutoscaleProviders map[string]autoscaler.Provider
	// AutoscaleInterval is the longest time between two autoscaler
	// passes, AutoscaleReconcileInterval between two listings of a
	// provider (0: the package defaults, 1s and 1m).
	AutoscaleInterval          time.Duration
	AutoscaleReconcileInterval time.Duration

	// LeaderHooks run, in order, when this server gains leadership (after
	// a Raft barrier and after the server's own leader components: plan
	// queue and applier, eval broker and blocked evals, heartbeat timers,
	// worker pausing) and are revoked, in reverse order, when it loses it.
	LeaderHooks []LeaderHook

	// FSMHooks receive the FSM's notifications after the server's own
	// hooks (which feed the eval broker and blocked evals). nil means none.
	FSMHooks fsm.Hooks

	// OnBootstrap, if set, is called each time this server calls
	// raft.BootstrapCluster (tests count it).
	OnBootstrap func()
}

// LeaderHook is a leader-only component: Establish starts it when this
// server becomes the leader and Revoke stops it when leadership is lost.
// Establish is called after a Raft barrier, so the local state reflects
// every committed entry. An Establish error makes the server give up
// leadership.
type LeaderHook interface {
	Name() string
	Establish(s *Server) error
	Revoke(s *Server) error
}

// withDefaults returns a copy of c with defaults filled in.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.Region == "" {
		out.Region = "global"
	}
	if out.Datacenter == "" {
		out.Datacenter = "dc1"
	}
	if out.BindAddr == "" {
		out.BindAddr = "0.0.0.0"
	}
	if out.RetryInterval <= 0 {
		out.RetryInterval = DefaultRetryInterval
	}
	if out.Logger == nil {
		out.Logger = hclog.NewNullLogger()
	}
	out.withRPCLimitDefaults()
	if out.RaftTimeoutScale <= 0 {
		out.RaftTimeoutScale = 1
	}
	if out.JobGaugeInterval <= 0 {
		out.JobGaugeInterval = DefaultJobGaugeInterval
	}
	if out.NoLeaderTimeout <= 0 {
		out.NoLeaderTimeout = DefaultNoLeaderTimeout
	}
	if out.ApplyTimeout <= 0 {
		out.ApplyTimeout = DefaultApplyTimeout
	}
	if out.HeartbeatMinTTL <= 0 {
		out.HeartbeatMinTTL = out.HeartbeatTTL
	}
	if out.HeartbeatMinTTL <= 0 {
		out.HeartbeatMinTTL = DefaultHeartbeatMinTTL
	}
	if out.HeartbeatGrace <= 0 {
		out.HeartbeatGrace = DefaultHeartbeatGrace
	}
	if out.FailoverHeartbeatTTL <= 0 {
		out.FailoverHeartbeatTTL = DefaultFailoverHeartbeatTTL
	}
	if out.NodeEvalWindow <= 0 {
		out.NodeEvalWindow = DefaultNodeEvalWindow
	}
	switch {
	case out.NumSchedulers == 0:
		out.NumSchedulers = runtime.NumCPU()
	case out.NumSchedulers < 0:
		out.NumSchedulers = 0
	}
	if out.LeaderWorkerFraction <= 0 {
		out.LeaderWorkerFraction = DefaultLeaderWorkerFraction
	}
	if out.FailedEvalFollowupDelay <= 0 {
		out.FailedEvalFollowupDelay = DefaultFailedEvalFollowupDelay
	}
	out.RetryJoin = append([]string(nil), c.RetryJoin...)
	out.LeaderHooks = append([]LeaderHook(nil), c.LeaderHooks...)
	return &out
}

// advertiseAddr computes the address others should use, given the address
// the listener actually bound.
func (c *Config) advertiseAddr(bound net.Addr) (string, error) {
	if c.AdvertiseAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdvertiseAddr); err != nil {
			return "", fmt.Errorf("advertise address %q: %w", c.AdvertiseAddr, err)
		}
		return c.AdvertiseAddr, nil
	}
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return bound.String(), nil
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port)), nil
}

// withRPCLimitDefaults fills in the RPC port's limits (rpc_limits.go).
func (c *Config) withRPCLimitDefaults() {
	if c.RPCMaxConnsPerClient == 0 {
		c.RPCMaxConnsPerClient = DefaultRPCMaxConnsPerClient
	} // negative: no limit (connLimiter)
	if c.RPCHandshakeTimeout <= 0 {
		c.RPCHandshakeTimeout = DefaultRPCHandshakeTimeout
	}
	if c.RPCMaxMessageBytes <= 0 {
		c.RPCMaxMessageBytes = DefaultRPCMaxMessageBytes
	}
}
