package server

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/fsm"
)

// Defaults for Config fields left zero.
const (
	DefaultRPCPort         = 4647
	DefaultRetryInterval   = 2 * time.Second
	DefaultNoLeaderTimeout = 5 * time.Second
	DefaultApplyTimeout    = 30 * time.Second
	DefaultMaxQueryTime    = 5 * time.Minute
	MaxMaxQueryTime        = 10 * time.Minute
	DefaultHeartbeatTTL    = 10 * time.Second
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

	// NumSchedulers is the number of scheduler workers (next issue).
	NumSchedulers int

	Logger hclog.Logger

	// RaftTimeoutScale multiplies raft's heartbeat, election and leader
	// lease timeouts. 0 means 1. Tests use e.g. 0.1 to elect in well under
	// a second on loopback.
	RaftTimeoutScale float64
	// RaftNoSync skips fsync in the Raft log store. Unsafe; for tests and
	// benchmarks that measure everything but the disk.
	RaftNoSync bool

	// NoLeaderTimeout bounds how long a request waits for a leader before
	// failing with structs.ErrNoLeader.
	NoLeaderTimeout time.Duration
	// ApplyTimeout bounds raft.Apply enqueueing.
	ApplyTimeout time.Duration
	// HeartbeatTTL is returned to registering nodes.
	HeartbeatTTL time.Duration

	// LeaderHooks run, in order, when this server gains leadership (after
	// a Raft barrier) and are revoked, in reverse order, when it loses it.
	// The eval broker, plan applier and heartbeat timers plug in here.
	LeaderHooks []LeaderHook

	// FSMHooks receive the FSM's leader-side notifications (eval broker,
	// blocked evals). nil means none.
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
	if out.RaftTimeoutScale <= 0 {
		out.RaftTimeoutScale = 1
	}
	if out.NoLeaderTimeout <= 0 {
		out.NoLeaderTimeout = DefaultNoLeaderTimeout
	}
	if out.ApplyTimeout <= 0 {
		out.ApplyTimeout = DefaultApplyTimeout
	}
	if out.HeartbeatTTL <= 0 {
		out.HeartbeatTTL = DefaultHeartbeatTTL
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
