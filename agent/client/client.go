package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/client/allocrunner"
	"github.com/drover-project/drover/agent/client/driver"
	"github.com/drover-project/drover/agent/client/driver/docker"
	"github.com/drover-project/drover/agent/client/driver/exec"
	"github.com/drover-project/drover/agent/client/driver/mock"
	"github.com/drover-project/drover/agent/client/driver/rawexec"
	"github.com/drover-project/drover/agent/client/fingerprint"
	clientstate "github.com/drover-project/drover/agent/client/state"
	"github.com/drover-project/drover/agent/client/template"
	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// Defaults for Config fields left zero.
const (
	DefaultUpdateInterval = 200 * time.Millisecond
	// DefaultMetricsInterval is Nomad's telemetry collection_interval.
	DefaultMetricsInterval = time.Second
	DefaultMaxQueryTime    = 5 * time.Minute
	DefaultGCInterval      = time.Minute
	DefaultGCRetention     = time.Hour
	DefaultGCMaxAllocs     = 50
	DefaultRetryBase       = 250 * time.Millisecond
	DefaultRetryLimit      = 15 * time.Second
	// DefaultReservedCPU and DefaultReservedMemoryMB are held back for the
	// operating system and the agent unless the config says otherwise.
	DefaultReservedCPU      = 100
	DefaultReservedMemoryMB = 256
)

// Config configures a Client.
type Config struct {
	// DataDir is the agent's data directory: the client keeps its state in
	// DataDir/client and allocation directories in DataDir/alloc.
	DataDir string
	// Servers are server RPC addresses (host:port).
	Servers []string
	// Transport carries RPCs (nil: a connection pool the client owns).
	Transport Transport
	// TLS, if set, makes the pool the client owns dial servers with TLS
	// (the agent's tls { rpc = true }).
	TLS *tls.Config
	// HTTPTLS: the agent's HTTP API is HTTPS (reported on the node, so
	// agents proxying to it use https).
	HTTPTLS bool
	// HTTPTLSFiles are the CA, certificate and key tasks' templates reach
	// an HTTPS API with.
	HTTPTLSFiles *template.TLSFiles
	// LocalServer, if set, is a server in this process: calls to its
	// address skip the network, and it is the default server.
	LocalServer LocalServer

	Region     string
	Datacenter string
	NodeName   string
	NodeClass  string
	NodePool   string // "" is the default pool
	Meta       map[string]string
	// HTTPAddr is the agent's HTTP address, reported on the node; tasks'
	// templates query it (on loopback when it is a wildcard address).
	HTTPAddr string
	// TemplateToken returns the token a task's templates query the HTTP
	// API with; nil: the task's workload identity (WorkloadToken), as in
	// Nomad.
	TemplateToken func(allocID, task string) (string, error)
	// NetworkAddr, if set, is the node's IP address attribute.
	NetworkAddr string
	// Reserved resources; nil takes the defaults.
	Reserved *structs.NodeReservedResources
	// CPUTotalCompute (MHz) and MemoryTotalMB, when positive, replace the
	// fingerprinted totals.
	CPUTotalCompute, MemoryTotalMB int
	// Network is the client's network_interface, host_network blocks and
	// dynamic port range.
	Network fingerprint.NetworkConfig
	// HostVolumes are the client's host_volume blocks by name; each whose
	// path is a directory is put on the node (fingerprintHostVolumes).
	HostVolumes map[string]*structs.ClientHostVolumeConfig

	// Drivers. The exec driver is always there, and healthy where it
	// can run (root, cgroups), as in Nomad; Exec is its configuration.
	RawExecEnabled bool
	MockEnabled    bool
	Exec           exec.Config
	// Docker configures the docker driver (nil: Nomad's defaults). It is
	// always present, and detected while its daemon answers.
	Docker *docker.Config
	// DriverFingerprintInterval is how often drivers are fingerprinted
	// again (0: docker.DefaultFingerprintPeriod); a change is registered.
	DriverFingerprintInterval time.Duration
	// Readiness is the operator's readiness command (nil: none). The node
	// registers as initializing and takes no work until a driver is
	// healthy and this command passed (readiness.go).
	Readiness *ReadinessConfig

	// Terminal allocations are removed GCRetention after they finished,
	// and beyond the newest GCMaxAllocs terminal ones; checked every
	// GCInterval.
	GCInterval  time.Duration
	GCRetention time.Duration
	GCMaxAllocs int

	// Task log rotation (0: 10 files of 10 MB).
	LogMaxFiles    int
	LogMaxFileSize int64

	// UpdateInterval is how often batched allocation updates are sent.
	UpdateInterval time.Duration
	// MetricsInterval is how often the node's resource and allocation
	// gauges are emitted (metrics.go). 0 means DefaultMetricsInterval.
	MetricsInterval time.Duration
	// MaxQueryTime bounds each blocking allocation watch.
	MaxQueryTime time.Duration
	// RebalanceInterval is how often (plus up to half of it at random) the
	// client moves to another server picked at random (servers.go); 0:
	// DefaultRebalanceInterval.
	RebalanceInterval time.Duration
	// FixedServerOrder keeps the client on the first server it is given
	// until that one fails, and never rebalances (tests that cut a known
	// server off). Otherwise a client without a LocalServer starts on a
	// server picked at random.
	FixedServerOrder bool
	// RetryBase and RetryLimit bound the backoff after failed RPCs.
	RetryBase  time.Duration
	RetryLimit time.Duration
	// MaxKillTimeout caps tasks' kill timeouts (0: no cap).
	MaxKillTimeout time.Duration
	// DestroyOnShutdown makes Shutdown kill every task and remove the
	// allocations (a -dev agent, whose data dir is thrown away).
	DestroyOnShutdown bool

	Logger hclog.Logger
	// Clock drives the client-side stop of disconnected allocations
	// (heartbeat_stop.go); nil: the real clock.
	Clock clock.Clock

	// fingerprintHook adjusts the node before it is first registered
	// (tests).
	fingerprintHook func(*structs.Node)
}

func (c *Config) withDefaults() *Config {
	out := *c
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&out.UpdateInterval, DefaultUpdateInterval)
	def(&out.MetricsInterval, DefaultMetricsInterval)
	def(&out.MaxQueryTime, DefaultMaxQueryTime)
	def(&out.GCInterval, DefaultGCInterval)
	def(&out.GCRetention, DefaultGCRetention)
	def(&out.RetryBase, DefaultRetryBase)
	def(&out.RebalanceInterval, DefaultRebalanceInterval)
	def(&out.RetryLimit, DefaultRetryLimit)
	def(&out.DriverFingerprintInterval, docker.DefaultFingerprintPeriod)
	if out.GCMaxAllocs <= 0 {
		out.GCMaxAllocs = DefaultGCMaxAllocs
	}
	if out.Region == "" {
		out.Region = structs.DefaultRegion
	}
	if out.Datacenter == "" {
		out.Datacenter = "dc1"
	}
	if out.Reserved == nil {
		out.Reserved = &structs.NodeReservedResources{
			Cpu:    structs.NodeReservedCpuResources{CpuShares: DefaultReservedCPU},
			Memory: structs.NodeReservedMemoryResources{MemoryMB: DefaultReservedMemoryMB},
		}
	}
	if out.Logger == nil {
		out.Logger = hclog.NewNullLogger()
	}
	if out.Clock == nil {
		out.Clock = clock.Real{}
	}
	return &out
}

// Client is a running client agent. Create it with New; stop it with
// Shutdown.
type Client struct {
	cfg       *Config
	logger    hclog.Logger
	transport Transport
	ownPool   *pool.Pool // closed on Shutdown; nil if the transport was given
	servers   *serverList
	stateDB   *clientstate.DB
	drivers   driverCatalog
	allocRoot string
	hostStats hostSampler // HostStats' previous CPU reading

	shutdownCh   chan struct{}
	shutdownOnce sync.Once
	wg           sync.WaitGroup

	// registeredCh is closed after the first successful registration.
	registeredCh   chan struct{}
	registeredOnce sync.Once

	nodeMu sync.Mutex
	node   *structs.Node // guarded by nodeMu
	// pendingEvents are node events not yet sent with a registration;
	// guarded by nodeMu.
	pendingEvents []*structs.NodeEvent
	// nodeChanged asks registerLoop to register the node again (its
	// status, readiness or drivers changed); buffered, one pending ask.
	nodeChanged chan struct{}
	// watchReset asks the allocation watch to restart its query
	// (resetWatch); buffered, one pending ask.
	watchReset chan struct{}

	// identities caches the tasks' workload identity tokens (identity.go).
	identities identityCache

	allocMu sync.Mutex
	runners map[string]*allocrunner.AllocRunner // guarded by allocMu
	closing bool                                // Shutdown has begun; guarded by allocMu
	// known maps every allocation the client has seen to the
	// AllocModifyIndex it last acted on (also for allocations it chose not
	// to run or already collected), so the watch fetches only changes.
	known map[string]uint64 // guarded by allocMu

	updates *updateBatcher
	// hbStop stops allocations that asked for it when heartbeats fail
	// (heartbeat_stop.go).
	hbStop *heartbeatStop
}

// driverCatalog maps driver names to drivers.
type driverCatalog map[string]driver.Driver

func (d driverCatalog) Driver(name string) driver.Driver { return d[name] }

// New starts a client: it sets up the node, restores saved allocations
// (re-attaching to their tasks), and starts registering with the servers,
// watching for allocations, sending updates and collecting garbage.
func New(cfg *Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("client: a data directory is required")
	}
	if len(cfg.Servers) == 0 && cfg.LocalServer == nil {
		return nil, errors.New("client: no servers configured (client { servers = [...] } or -servers)")
	}
	c := &Client{
		cfg:          cfg,
		logger:       cfg.Logger.Named("client"),
		allocRoot:    filepath.Join(cfg.DataDir, "alloc"),
		shutdownCh:   make(chan struct{}),
		registeredCh: make(chan struct{}),
		nodeChanged:  make(chan struct{}, 1),
		watchReset:   make(chan struct{}, 1),
		runners:      map[string]*allocrunner.AllocRunner{},
		known:        map[string]uint64{},
	}
	c.hbStop = newHeartbeatStop(cfg.Clock, c.stopDisconnected)
	c.transport = cfg.Transport
	if c.transport == nil {
		c.ownPool = pool.New(pool.Config{Logger: cfg.Logger, TLS: cfg.TLS})
		c.transport = c.ownPool
	}
	servers := cfg.Servers
	if cfg.LocalServer != nil {
		c.transport = &localTransport{local: cfg.LocalServer, next: c.transport}
		servers = append([]string{cfg.LocalServer.RPCAddr()}, servers...)
	}
	c.servers = newServerList(servers)
	balance := cfg.LocalServer == nil && !cfg.FixedServerOrder
	if balance {
		c.servers.startRandom()
	}
	c.drivers = driverCatalog{
		driverspec.RawExecName: rawexec.New(rawexec.Config{Enabled: cfg.RawExecEnabled, Logger: c.logger}),
	}
	execCfg := cfg.Exec
	execCfg.Logger = c.logger
	c.drivers[driverspec.ExecName] = exec.New(execCfg)
	dcfg := docker.DefaultConfig()
	if cfg.Docker != nil {
		dcfg = *cfg.Docker
	}
	dcfg.Logger = c.logger
	c.drivers[driverspec.DockerName] = docker.New(dcfg)
	if cfg.MockEnabled {
		c.drivers[driverspec.MockName] = mock.New(driverspec.MockName)
		c.drivers[driverspec.MockAlias] = mock.New(driverspec.MockAlias)
	}

	clientDir := filepath.Join(cfg.DataDir, "client")
	for _, d := range []string{clientDir, c.allocRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.closeResources()
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	db, err := clientstate.Open(filepath.Join(clientDir, "state.db"))
	if err != nil {
		c.closeResources()
		return nil, fmt.Errorf("client: %w", err)
	}
	c.stateDB = db
	node, err := c.setupNode(clientDir)
	if err != nil {
		c.closeResources()
		return nil, err
	}
	gated := c.initialReadiness(node)
	status := node.Status // the loops own the node from here on
	c.node = node
	c.updates = newUpdateBatcher(c)
	c.restore()

	c.goLoop(c.registerLoop)
	c.goLoop(c.watchAllocs)
	c.goLoop(c.updates.run)
	c.goLoop(c.gcLoop)
	c.goLoop(c.metricsLoop)
	c.goLoop(c.driverHealthLoop)
	if gated {
		c.goLoop(c.readinessLoop)
	}
	if balance {
		c.goLoop(c.rebalanceLoop)
	}
	c.logger.Info("client started", "node_id", node.ID, "node_name", node.Name,
		"datacenter", node.Datacenter, "servers", c.servers.all(), "data_dir", cfg.DataDir, "status", status)
	return c, nil
}

func (c *Client) goLoop(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// closeResources releases what New opened.
func (c *Client) closeResources() {
	if c.stateDB != nil {
		c.stateDB.Close()
	}
	if c.ownPool != nil {
		c.ownPool.Shutdown()
	}
	for _, d := range c.drivers {
		if cl, ok := d.(io.Closer); ok { // detaches from tasks, which keep running
			_ = cl.Close()
		}
	}
}

// Shutdown stops the client's loops and its allocation runners but leaves
// every task running: a client started later on the same data directory
// re-attaches to them (with DestroyOnShutdown it kills them first).
// Pending status updates are sent once more (best effort). It is
// idempotent.
func (c *Client) Shutdown() error {
	c.shutdownOnce.Do(func() {
		c.allocMu.Lock()
		c.closing = true // no runner is added from here on (addRunner)
		runners := make([]*allocrunner.AllocRunner, 0, len(c.runners))
		for _, ar := range c.runners {
			runners = append(runners, ar)
		}
		c.allocMu.Unlock()
		if c.cfg.DestroyOnShutdown {
			c.logger.Info("shutting down; stopping every task")
			var wg sync.WaitGroup
			for _, ar := range runners {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.destroy(ar)
				}()
			}
			wg.Wait()
		} else {
			c.logger.Info("shutting down; tasks keep running")
		}
		close(c.shutdownCh)
		c.hbStop.stop()
		for _, ar := range runners {
			ar.Shutdown()
		}
		c.wg.Wait()
		c.closeResources()
	})
	return nil
}

// shuttingDown reports whether Shutdown has begun.
func (c *Client) shuttingDown() bool {
	select {
	case <-c.shutdownCh:
		return true
	default:
		return false
	}
}

// sleep waits for d or shutdown; it returns false on shutdown.
func (c *Client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.shutdownCh:
		return false
	}
}

// nodeUpdated asks registerLoop to register the node again soon.
func (c *Client) nodeUpdated() {
	select {
	case c.nodeChanged <- struct{}{}:
	default: // one ask is pending already
	}
}

// Node returns a copy of the node as the client registers it.
func (c *Client) Node() *structs.Node {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	return c.node.Copy()
}

// NodeID returns the node's ID.
func (c *Client) NodeID() string {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	return c.node.ID
}

// nodeIdentity returns the node's ID and secret, which every call the
// client makes for its node carries.
func (c *Client) nodeIdentity() (id, secret string) {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	return c.node.ID, c.node.SecretID
}

// Allocs returns the client's view of the allocations it holds (running or
// finished but not yet collected), sorted by ID.
func (c *Client) Allocs() []*structs.Allocation {
	c.allocMu.Lock()
	runners := make([]*allocrunner.AllocRunner, 0, len(c.runners))
	for _, ar := range c.runners {
		runners = append(runners, ar)
	}
	c.allocMu.Unlock()
	out := make([]*structs.Allocation, 0, len(runners))
	for _, ar := range runners {
		out = append(out, ar.Alloc())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// runner returns the runner of an allocation, or nil.
func (c *Client) runner(id string) *allocrunner.AllocRunner {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	return c.runners[id]
}

// stopDisconnected stops an allocation because the client has gone too
// long without a successful heartbeat (heartbeatStop). The servers have
// marked it lost; the client reports it finished once it can reach them.
func (c *Client) stopDisconnected(allocID, reason string) {
	ar := c.runner(allocID)
	if ar == nil {
		return
	}
	c.logger.Warn("stopping an allocation: cut off from the servers", "alloc_id", allocID, "reason", reason)
	ar.Kill(reason)
}

// newRunner builds (but does not run) a runner for a.
func (c *Client) newRunner(a *structs.Allocation, restored map[string]*clientstate.TaskRunnerState) (*allocrunner.AllocRunner, error) {
	node := c.Node()
	var prev *allocrunner.AllocRunner
	if restored == nil && a.PreviousAllocation != "" && a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.StickyDisk() {
			prev = c.runner(a.PreviousAllocation)
		}
	}
	return allocrunner.New(allocrunner.Config{
		Previous: prev,
		Alloc:    a, Logger: c.logger, AllocRoot: c.allocRoot, Drivers: c.drivers,
		StateDB: c.stateDB, Updater: c.updates.add, NodeFault: c.updates.addFault,
		Node: allocrunner.NodeInfo{ID: node.ID, Name: node.Name, Datacenter: node.Datacenter,
			Region: c.cfg.Region, Class: node.NodeClass, Pool: node.NodePool,
			Attributes: node.Attributes, Meta: node.Meta, HostVolumes: node.HostVolumes},
		LogMaxFiles: c.cfg.LogMaxFiles, LogMaxFileSize: c.cfg.LogMaxFileSize,
		MaxKillTimeout: c.cfg.MaxKillTimeout,
		Restored:       restored,
		Identity:       c.signIdentity,
		Services:       serviceRPC{c},
		NomadAddr:      allocrunner.NomadAddrFor(c.cfg.HTTPAddr, c.cfg.HTTPTLS),
		TemplateToken:  c.templateToken(),
		NomadTLS:       c.cfg.HTTPTLSFiles,
	})
}

// restore starts runners for the allocations saved by an earlier client,
// re-attaching to their tasks. The servers' view, once fetched, decides
// whether they keep running.
func (c *Client) restore() {
	entries, err := c.stateDB.Allocs()
	if err != nil {
		c.logger.Error("some saved allocations could not be read", "error", err)
	}
	for _, e := range entries {
		ar, err := c.newRunner(e.Alloc, e.Tasks)
		if err != nil {
			c.logger.Error("cannot restore allocation", "alloc_id", e.Alloc.ID, "error", err)
			continue
		}
		if !c.addRunner(e.Alloc.ID, ar, func() { c.known[e.Alloc.ID] = e.Alloc.AllocModifyIndex }) {
			return
		}
		ar.Run()
		c.logger.Info("restored allocation", "alloc_id", e.Alloc.ID)
	}
}

// addRunner records a new allocation runner (and, under the same lock,
// what also runs), unless Shutdown has begun: then it reports false and
// the runner must not run, so that Shutdown stops every runner that ever
// started and nothing writes in the allocation directories after it.
func (c *Client) addRunner(id string, ar *allocrunner.AllocRunner, also func()) bool {
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	if c.closing {
		return false
	}
	c.runners[id] = ar
	c.hbStop.watch(ar.Alloc())
	if also != nil {
		also()
	}
	return true
}
