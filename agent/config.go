package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/agent/client/driver/docker"
	"github.com/drover-project/drover/agent/client/driver/exec"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// Default ports, as Nomad's.
const (
	DefaultHTTPPort = 4646
	DefaultRPCPort  = 4647
)

// DefaultRetryInterval is how long the server waits between join attempts.
const DefaultRetryInterval = server.DefaultRetryInterval

// Config is the complete configuration of one agent: defaults, then config
// files in order, then command-line flags. Zero port values mean "pick a free
// port" (tests use that); the bound addresses are available from the Agent.
type Config struct {
	// DevMode: a single-node server with a throwaway data directory.
	DevMode bool

	NodeName   string
	Region     string
	Datacenter string
	// DataDir holds Raft data. Required for a server outside dev mode.
	DataDir  string
	BindAddr string
	LogLevel string
	LogJSON  bool
	// EnableDebug serves Go's net/http/pprof handlers under /debug/pprof/
	// on the HTTP API and turns on mutex and block profiling (see
	// DebugMutexProfileFraction). Off by default; on in -dev, as Nomad.
	EnableDebug bool

	Ports  Ports
	Server ServerConfig
	Client ClientConfig
	// TLS is Nomad's tls block: HTTPS on the HTTP API, TLS on the RPC
	// port (RPC and Raft), the CA and this agent's certificate.
	TLS tlsutil.Config
	// Plugins holds task driver settings by plugin name (parsed now, used
	// by the client).
	Plugins map[string]*PluginConfig
	// Limits is the limits { } block (config_limits.go).
	Limits LimitsConfig
	// ACL is Nomad's acl block (servers and clients); see docs/security.md.
	ACL ACLConfig

	// Files lists the config files that were loaded, in order.
	Files []string

	// serverConfigHook, if set, adjusts the server configuration just
	// before the server starts (tests shorten Raft timeouts).
	serverConfigHook func(*server.Config)
	// clientConfigHook, if set, adjusts the client configuration just
	// before the client starts (tests).
	clientConfigHook func(*client.Config)
}

// ACLConfig is the acl block.
type ACLConfig struct {
	// Enabled turns on ACL enforcement: every request needs a token
	// granting what it does (the anonymous policy for none). Off (the
	// default), nothing is checked: anyone who reaches the HTTP or RPC
	// port may do everything.
	Enabled bool
	// TokenMinExpirationTTL and TokenMaxExpirationTTL bound the lifetime
	// a new token may be given (token_min_expiration_ttl and
	// token_max_expiration_ttl; 0: Nomad's defaults, 1m and 24h).
	TokenMinExpirationTTL time.Duration
	TokenMaxExpirationTTL time.Duration
}

// Ports are the agent's listening ports.
type Ports struct {
	HTTP int
	RPC  int
}

// ServerConfig configures the server part of the agent.
type ServerConfig struct {
	Enabled         bool
	BootstrapExpect int
	// NumSchedulers is the number of scheduler workers; 0 lets the server
	// choose.
	NumSchedulers int
	// JobTrackedVersions is how many versions of each job the servers
	// keep (Nomad's job_tracked_versions); 0 means the default, 6.
	JobTrackedVersions int
	RetryJoin          []string
	RetryInterval      time.Duration
	// HeartbeatGrace is added to a node's TTL before it is marked down;
	// MinHeartbeatTTL is the least TTL handed to clients. Zero takes the
	// server's defaults (10 s each, as Nomad).
	HeartbeatGrace  time.Duration
	MinHeartbeatTTL time.Duration
	// FailoverHeartbeatTTL (failover_heartbeat_ttl, 5m as in Nomad) is the
	// TTL every node gets when a server gains leadership: no node is
	// marked down because the leader changed.
	FailoverHeartbeatTTL time.Duration
	// Garbage collection on the leader, with Nomad's names and defaults:
	// every JobGCInterval (job_gc_interval, 5m) the leader collects
	// terminal evaluations older than EvalGCThreshold (eval_gc_threshold,
	// 1h), dead jobs older than JobGCThreshold (job_gc_threshold, 4h) and
	// nodes down for longer than NodeGCThreshold (node_gc_threshold, 24h),
	// and deployments no longer active older than DeploymentGCThreshold
	// (deployment_gc_threshold, 1h). Unlike Nomad, one interval drives
	// them all.
	JobGCInterval         time.Duration
	EvalGCThreshold       time.Duration
	JobGCThreshold        time.Duration
	NodeGCThreshold       time.Duration
	DeploymentGCThreshold time.Duration
	// NodeQuarantine is the node_quarantine block: the flaky-node
	// quarantine (docs/reliability.md), on by default with 3 node faults
	// in 10m and a 15m cool-down.
	NodeQuarantine server.NodeQuarantineConfig
	// AutoscaleProviders are the autoscale_provider blocks: the providers
	// autoscaled node pools may name (docs/operations.md).
	// AutoscaleInterval is the longest time between two autoscaler passes
	// (0: 1s).
	AutoscaleProviders []AutoscaleProviderConfig
	AutoscaleInterval  time.Duration
}

// AutoscaleProviderConfig is server { autoscale_provider "<name>" { ... } }.
// Type is the provider's kind (default: the name); Drover has one, local:
// Dir holds its instances ("": <data dir>/autoscale/<name>), Binary is
// the drover binary the clients run ("": this one), Servers the servers'
// RPC addresses the clients join ("": the cluster's servers, as this
// server knows them), Quota the most instances at once (0: no limit), and
// ClientConfig HCL added to every client's configuration.
type AutoscaleProviderConfig struct {
	Name, Type, Dir, Binary string
	Servers                 []string
	Quota                   int
	ClientConfig            string
}

// Nomad's server garbage collection defaults.
const (
	DefaultJobGCInterval   = 5 * time.Minute
	DefaultEvalGCThreshold = time.Hour
	DefaultJobGCThreshold  = 4 * time.Hour
	DefaultNodeGCThreshold = 24 * time.Hour
	// DefaultDeploymentGCThreshold is Nomad's deployment_gc_threshold.
	DefaultDeploymentGCThreshold = time.Hour
)

// ClientConfig configures the client part of the agent.
type ClientConfig struct {
	Enabled bool
	// Servers are server RPC addresses, host[:port]; the default port is
	// DefaultRPCPort. A client in an agent that also runs a server uses
	// that server when Servers is empty.
	Servers   []string
	NodeClass string
	// NodePool is the node pool the client's node joins ("default" when
	// empty); the servers create it when it does not exist.
	NodePool string
	Meta     map[string]string
	// Reserved resources are held back from scheduling (nil: the client's
	// small defaults).
	Reserved *ReservedConfig
	// CPUTotalCompute (MHz) and MemoryTotalMB, when positive, replace the
	// fingerprinted totals (Nomad's cpu_total_compute and
	// memory_total_mb): an autoscaled instance offers its type's size.
	CPUTotalCompute int
	MemoryTotalMB   int
	// Client garbage collection: every GCInterval (gc_interval, 1m, as
	// Nomad) the client removes finished allocations' directories once
	// they are GCRetention old (gc_retention, 1h; Drover's own setting)
	// and beyond the newest GCMaxAllocs finished ones (gc_max_allocs, 50,
	// Nomad's default). Each must be positive.
	GCInterval  time.Duration
	GCRetention time.Duration
	GCMaxAllocs int
	// MaxKillTimeout caps tasks' kill_timeout (0: no cap).
	MaxKillTimeout time.Duration
	// NetworkInterface is network_interface: the interface whose address
	// is the default host network ("": the default route's, else
	// loopback).
	NetworkInterface string
	// MinDynamicPort and MaxDynamicPort bound the dynamic ports given to
	// tasks (0: Nomad's defaults, 20000 and 32000).
	MinDynamicPort, MaxDynamicPort int
	// HostNetworks are the host_network blocks, in file order.
	HostNetworks []HostNetworkConfig
	// ChrootEnv is chroot_env: host path -> path in an exec task's
	// chroot (nil: Nomad's default set).
	ChrootEnv map[string]string
	// HostVolumes are the host_volume blocks, in file order: directories
	// of this host that jobs may mount by name (a group volume block of
	// type "host").
	HostVolumes []HostVolumeConfig
	// Readiness is the readiness { command, args, interval, timeout,
	// recheck } block (nil: none; the node is ready once a driver is
	// healthy).
	Readiness *client.ReadinessConfig
}

// HostVolumeConfig is client { host_volume "<name>" { path, read_only } }.
type HostVolumeConfig struct {
	Name     string
	Path     string
	ReadOnly bool
}

// HostNetworkConfig is client { host_network "<name>" { cidr, interface,
// reserved_ports } }.
type HostNetworkConfig struct {
	Name          string
	CIDR          string
	Interface     string
	ReservedPorts string
}

// ReservedConfig is the client { reserved { ... } } block: CPU in MHz,
// memory and disk in MB.
type ReservedConfig struct {
	CPU      int
	MemoryMB int
	DiskMB   int
	// ReservedPorts is reserved_ports: ports ("22,80,8000-8100") held
	// back on every host network.
	ReservedPorts string
}

// Task driver plugins the client knows.
const (
	PluginRawExec = "raw_exec"
	PluginExec    = "exec"
	PluginMock    = "mock_driver"
	PluginDocker  = "docker"
)

// knownPlugins lists the plugin names a config may set.
var knownPlugins = map[string]bool{PluginRawExec: true, PluginExec: true, PluginMock: true, PluginDocker: true}

// PluginConfig is one task driver's settings: enabled for raw_exec and
// mock_driver; Nomad's exec options for exec (which is on wherever it
// can run, as in Nomad).
type PluginConfig struct {
	Enabled bool
	// exec: no_pivot_root, default_pid_mode, default_ipc_mode,
	// allow_caps (nil: Nomad's defaults), and Drover's pids_limit (0: the
	// driver's default, -1: none).
	NoPivotRoot    bool
	DefaultPidMode string
	DefaultIpcMode string
	AllowCaps      []string
	PidsLimit      int64
	// Docker is the docker plugin's config block (config_docker.go); nil
	// elsewhere.
	Docker *docker.Config
}

// DefaultConfig returns the configuration used before any file or flag.
func DefaultConfig() *Config {
	return &Config{
		Region:     structs.DefaultRegion,
		Datacenter: "dc1",
		BindAddr:   "0.0.0.0",
		LogLevel:   "info",
		Ports:      Ports{HTTP: DefaultHTTPPort, RPC: DefaultRPCPort},
		Server: ServerConfig{
			RetryInterval:         DefaultRetryInterval,
			JobGCInterval:         DefaultJobGCInterval,
			EvalGCThreshold:       DefaultEvalGCThreshold,
			JobGCThreshold:        DefaultJobGCThreshold,
			NodeGCThreshold:       DefaultNodeGCThreshold,
			DeploymentGCThreshold: DefaultDeploymentGCThreshold,
		},
		Client: ClientConfig{
			Meta:        map[string]string{},
			GCInterval:  client.DefaultGCInterval,
			GCRetention: client.DefaultGCRetention,
			GCMaxAllocs: client.DefaultGCMaxAllocs,
		},
		Plugins: map[string]*PluginConfig{},
		Limits:  DefaultLimits(),
	}
}

// DevConfig returns the -dev defaults: a single-node server and a client
// (raw_exec and mock_driver enabled) on loopback with debug logging and
// enable_debug (pprof) on, as Nomad's dev agent. Files
// and flags still override it. The data directory is left empty: the agent creates a fresh
// temporary one and removes it on shutdown.
func DevConfig() *Config {
	c := DefaultConfig()
	c.DevMode = true
	c.BindAddr = "127.0.0.1"
	c.LogLevel = "debug"
	c.EnableDebug = true
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
	c.Plugins[PluginRawExec] = &PluginConfig{Enabled: true}
	c.Plugins[PluginMock] = &PluginConfig{Enabled: true}
	return c
}

// execConfig is the exec driver's configuration: plugin "exec" and the
// client's chroot_env.
func (c *Config) execConfig() exec.Config {
	ec := exec.Config{ChrootEnv: c.Client.ChrootEnv}
	if p := c.Plugins[PluginExec]; p != nil {
		ec.NoPivotRoot, ec.DefaultPidMode, ec.DefaultIpcMode = p.NoPivotRoot, p.DefaultPidMode, p.DefaultIpcMode
		ec.AllowCaps, ec.PidsLimit = p.AllowCaps, p.PidsLimit
	}
	return ec
}

// PluginEnabled reports whether the named driver plugin is enabled.
func (c *Config) PluginEnabled(name string) bool {
	p := c.Plugins[name]
	return p != nil && p.Enabled
}

// ErrRelativeBase is returned by ResolvePaths when the directory it resolves
// against is not itself absolute.
var ErrRelativeBase = errors.New("paths must be resolved against an absolute directory")

// pathSettings returns a pointer to every filesystem path the configuration
// holds: the data directory (data_dir, -data-dir; the client's state and
// allocation directories live under it) and the config files loaded.
// Drover has no separate plugin_dir, alloc_dir, state_dir or log_file
// settings; one added later belongs in this list.
func (c *Config) pathSettings() []*string {
	ps := []*string{&c.DataDir, &c.TLS.CAFile, &c.TLS.CertFile, &c.TLS.KeyFile}
	for i := range c.Files {
		ps = append(ps, &c.Files[i])
	}
	return ps
}

// ResolvePaths makes every path in the configuration absolute, a relative
// one taken against wd (the agent's working directory at start-up), as
// Nomad does. A task's directory is handed to processes that run elsewhere
// (the raw_exec supervisor runs in "/"), so a relative data directory
// would name another place for them. Empty paths stay empty; wd must be
// absolute (ErrRelativeBase otherwise).
func (c *Config) ResolvePaths(wd string) error {
	if !filepath.IsAbs(wd) {
		return fmt.Errorf("%w: %q", ErrRelativeBase, wd)
	}
	for _, p := range c.pathSettings() {
		if *p == "" {
			continue
		}
		if filepath.IsAbs(*p) {
			*p = filepath.Clean(*p)
		} else {
			*p = filepath.Join(wd, *p)
		}
	}
	return nil
}

// NodeNameOrHost returns NodeName, or the host name when it is empty.
func (c *Config) NodeNameOrHost() string {
	if c.NodeName != "" {
		return c.NodeName
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "drover"
	}
	return h
}

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if !c.Server.Enabled && !c.Client.Enabled {
		add("the agent must run a server or a client: set server { enabled = true }, -server, or -dev")
	}
	if c.Server.BootstrapExpect < 0 {
		add("bootstrap_expect must not be negative; got %d", c.Server.BootstrapExpect)
	}
	if c.Server.BootstrapExpect > 0 && !c.Server.Enabled {
		add("bootstrap_expect is set but the server is not enabled (add -server or server { enabled = true })")
	}
	if c.DevMode && c.Server.BootstrapExpect > 1 {
		add("dev mode runs a single server; bootstrap_expect must be 1, got %d", c.Server.BootstrapExpect)
	}
	if c.Server.JobTrackedVersions < 0 {
		add("job_tracked_versions must not be negative; got %d", c.Server.JobTrackedVersions)
	}
	if c.Server.NumSchedulers < 0 {
		add("num_schedulers must not be negative; got %d", c.Server.NumSchedulers)
	}
	if c.Server.Enabled && !c.DevMode && c.DataDir == "" {
		add("data_dir is required for a server (or use -dev)")
	}
	if c.Client.Enabled && !c.Server.Enabled && !c.DevMode && c.DataDir == "" {
		add("data_dir is required for a client (or use -dev)")
	}
	if c.Client.Enabled && !c.Server.Enabled && len(c.Client.Servers) == 0 {
		add("a client needs servers to join: set client { servers = [...] } or -servers")
	}
	for _, addr := range c.Client.Servers {
		if err := checkJoinAddr(addr); err != nil {
			add("client servers %q: %v", addr, err)
		}
	}
	seenProviders := map[string]bool{}
	for _, p := range c.Server.AutoscaleProviders {
		switch {
		case p.Type != "local":
			add("server autoscale_provider %q: Drover does not support provider type %q (only local; docs/operations.md says how to write one)", p.Name, p.Type)
		case seenProviders[p.Name]:
			add("server autoscale_provider %q: given twice", p.Name)
		case p.Quota < 0:
			add("server autoscale_provider %q: quota must not be negative", p.Name)
		}
		seenProviders[p.Name] = true
	}
	if c.Client.CPUTotalCompute < 0 || c.Client.MemoryTotalMB < 0 {
		add("client cpu_total_compute and memory_total_mb must not be negative")
	}
	if r := c.Client.Reserved; r != nil && (r.CPU < 0 || r.MemoryMB < 0 || r.DiskMB < 0) {
		add("client reserved resources must not be negative; got cpu %d, memory %d, disk %d", r.CPU, r.MemoryMB, r.DiskMB)
	}
	c.validateClientNetwork(add)
	if (c.TLS.EnableHTTP || c.TLS.EnableRPC) && (c.TLS.CAFile == "" || c.TLS.CertFile == "" || c.TLS.KeyFile == "") {
		add("tls: ca_file, cert_file and key_file are required when http or rpc is true")
	}
	if c.Client.MaxKillTimeout < 0 {
		add("client max_kill_timeout must not be negative; got %s", c.Client.MaxKillTimeout)
	}
	if r := c.Client.Readiness; r != nil {
		if strings.TrimSpace(r.Command) == "" {
			add("client readiness.command must name the command to run")
		}
		if r.Interval <= 0 {
			add("client readiness.interval must be a positive duration; got %s", r.Interval)
		}
		if r.Timeout <= 0 {
			add("client readiness.timeout must be a positive duration; got %s", r.Timeout)
		}
	}
	if c.Client.GCMaxAllocs <= 0 {
		add("client gc_max_allocs must be positive; got %d", c.Client.GCMaxAllocs)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"client gc_interval", c.Client.GCInterval},
		{"client gc_retention", c.Client.GCRetention},
		{"server job_gc_interval", c.Server.JobGCInterval},
		{"server eval_gc_threshold", c.Server.EvalGCThreshold},
		{"server job_gc_threshold", c.Server.JobGCThreshold},
		{"server node_gc_threshold", c.Server.NodeGCThreshold},
		{"server deployment_gc_threshold", c.Server.DeploymentGCThreshold},
	} {
		if d.v <= 0 {
			add("%s must be a positive duration; got %s", d.name, d.v)
		}
	}
	if c.Server.RetryInterval <= 0 {
		add("retry_interval must be positive; got %s", c.Server.RetryInterval)
	}
	for _, addr := range c.Server.RetryJoin {
		if err := checkJoinAddr(addr); err != nil {
			add("retry_join %q: %v", addr, err)
		}
	}
	checkPort := func(name string, p int) {
		if p < 0 || p > 65535 {
			add("ports.%s must be between 0 and 65535; got %d", name, p)
		}
	}
	checkPort("http", c.Ports.HTTP)
	checkPort("rpc", c.Ports.RPC)
	if c.Ports.HTTP != 0 && c.Ports.HTTP == c.Ports.RPC {
		add("ports.http and ports.rpc must differ; both are %d", c.Ports.HTTP)
	}
	if net.ParseIP(c.BindAddr) == nil {
		add("bind_addr must be an IP address; got %q", c.BindAddr)
	}
	if msg := structs.ValidName(c.Region); msg != "" {
		add("region %q: %s", c.Region, msg)
	}
	if msg := structs.ValidName(c.Datacenter); msg != "" {
		add("datacenter %q: %s", c.Datacenter, msg)
	}
	if c.NodeName != "" && len(c.NodeName) > 256 {
		add("name must be at most 256 characters")
	}
	if hclog.LevelFromString(c.LogLevel) == hclog.NoLevel {
		add("log_level must be one of trace, debug, info, warn, error; got %q", c.LogLevel)
	}
	for name := range c.Plugins {
		if !knownPlugins[name] {
			add("plugin %q is not supported (Drover has raw_exec, exec, docker and mock_driver)", name)
		}
	}
	ec := c.execConfig()
	if err := ec.Validate(); err != nil {
		add("plugin \"exec\" or client chroot_env: %v", err)
	}
	errs = append(errs, c.Limits.validate()...)
	return errors.Join(errs...)
}

// checkJoinAddr accepts "host" or "host:port".
func checkJoinAddr(addr string) error {
	if addr == "" {
		return errors.New("empty address")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if strings.Contains(addr, ":") && net.ParseIP(addr) == nil {
			return err
		}
		return nil // a bare host or IP; the RPC port is added
	}
	if host == "" {
		return errors.New("missing host")
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// joinAddrs returns RetryJoin with the default RPC port added where a port
// is missing.
func (c *Config) joinAddrs() []string { return withDefaultPort(c.Server.RetryJoin) }

// clientServers returns the client's servers with the default RPC port
// added where a port is missing.
func (c *Config) clientServers() []string { return withDefaultPort(c.Client.Servers) }

func withDefaultPort(addrs []string) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(a, strconv.Itoa(DefaultRPCPort))
		}
		out = append(out, a)
	}
	return out
}

// validateClientNetwork checks the client's port range, reserved ports and
// host networks.
func (c *Config) validateClientNetwork(add func(string, ...any)) {
	cl := &c.Client
	lo, hi := cl.MinDynamicPort, cl.MaxDynamicPort
	if lo == 0 {
		lo = structs.DefaultMinDynamicPort
	}
	if hi == 0 {
		hi = structs.DefaultMaxDynamicPort
	}
	switch {
	case cl.MinDynamicPort < 0 || cl.MinDynamicPort > structs.MaxValidPort:
		add("client min_dynamic_port must be between 1 and %d; got %d", structs.MaxValidPort, cl.MinDynamicPort)
	case cl.MaxDynamicPort < 0 || cl.MaxDynamicPort > structs.MaxValidPort:
		add("client max_dynamic_port must be between 1 and %d; got %d", structs.MaxValidPort, cl.MaxDynamicPort)
	case lo > hi:
		add("client min_dynamic_port (%d) must not be above max_dynamic_port (%d)", lo, hi)
	}
	if r := cl.Reserved; r != nil {
		if _, err := structs.ParsePortRanges(r.ReservedPorts); err != nil {
			add("client reserved reserved_ports: %v", err)
		}
	}
	seen := map[string]bool{}
	for _, hn := range cl.HostNetworks {
		if msg := structs.ValidName(hn.Name); msg != "" {
			add("client host_network %q: %s", hn.Name, msg)
		}
		if seen[hn.Name] {
			add("client host_network %q is defined twice", hn.Name)
		}
		seen[hn.Name] = true
		if hn.CIDR == "" && hn.Interface == "" {
			add("client host_network %q needs a cidr or an interface", hn.Name)
		}
		if hn.CIDR != "" {
			if _, _, err := net.ParseCIDR(hn.CIDR); err != nil {
				add("client host_network %q: invalid cidr %q", hn.Name, hn.CIDR)
			}
		}
		if _, err := structs.ParsePortRanges(hn.ReservedPorts); err != nil {
			add("client host_network %q reserved_ports: %v", hn.Name, err)
		}
	}
	vols := map[string]bool{}
	for _, hv := range cl.HostVolumes {
		if msg := structs.ValidName(hv.Name); msg != "" {
			add("client host_volume %q: %s", hv.Name, msg)
		}
		if vols[hv.Name] {
			add("client host_volume %q is defined twice", hv.Name)
		}
		vols[hv.Name] = true
		if !filepath.IsAbs(hv.Path) {
			add("client host_volume %q: path must be an absolute path; got %q", hv.Name, hv.Path)
		}
	}
}
