package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/drover-project/drover/agent/client"
	"github.com/drover-project/drover/agent/client/allocdir"
	"github.com/drover-project/drover/agent/client/fingerprint"
	"github.com/drover-project/drover/agent/client/template"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/autoscaler"
	"github.com/drover-project/drover/structs"
	"github.com/hashicorp/go-hclog"
)

// httpShutdownTimeout bounds how long Shutdown waits for in-flight HTTP
// requests (blocking queries are cut off).
const httpShutdownTimeout = 5 * time.Second

// Agent is a running Drover agent: a server, a client, or both, and the
// HTTP API in front of them. Create one with NewAgent and stop it with
// Shutdown.
type Agent struct {
	config *Config
	logger hclog.Logger

	server     *server.Server // nil for a client-only agent
	client     *client.Client // nil unless the client is enabled
	httpServer *http.Server
	httpAddr   string
	httpDone   chan struct{} // closed when Serve returns
	// tls is the loaded tls block (nil: TLS off).
	tls *tlsutil.Configurator

	// dataDir is the data directory in use; devDataDir is the temporary
	// one created for -dev, removed on Shutdown ("" otherwise).
	dataDir    string
	devDataDir string

	// releaseProfiling undoes the mutex and block profiling rates set for
	// enable_debug (nil when not set).
	releaseProfiling func()

	shutdownOnce sync.Once
	shutdownErr  error
}

// NewAgent validates cfg, starts the server (if enabled), the HTTP API and
// the client (if enabled), and returns once they accept connections (it
// does not wait for a leader or for the client's registration).
// logger may be nil: one is built from cfg writing to stderr. On error
// everything started is stopped again.
func NewAgent(cfg *Config, logger hclog.Logger) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = NewLogger(cfg, os.Stderr)
	}
	a := &Agent{config: cfg, logger: logger.Named("agent")}
	if err := a.start(logger); err != nil {
		_ = a.Shutdown()
		return nil, err
	}
	return a, nil
}

func (a *Agent) start(root hclog.Logger) error {
	cfg := a.config
	dataDir := cfg.DataDir
	if cfg.DevMode && dataDir == "" {
		dir, err := os.MkdirTemp("", "drover-dev-")
		if err != nil {
			return fmt.Errorf("creating dev data dir: %w", err)
		}
		a.devDataDir = dir
		dataDir = dir
	}
	if dataDir != "" && !filepath.IsAbs(dataDir) {
		// A Config built in code skipped LoadConfig's ResolvePaths.
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return fmt.Errorf("resolving data dir %q: %w", dataDir, err)
		}
		dataDir = abs
	}
	a.dataDir = dataDir
	tlsConf, err := tlsutil.New(cfg.TLS, cfg.Region)
	if err != nil {
		return err
	}
	a.tls = tlsConf
	// Telemetry before anything emits: raft counts its first election.
	processTelemetry()
	if cfg.EnableDebug {
		a.releaseProfiling = enableProfiling()
	}

	// The HTTP listener comes first so the client can report its address;
	// the server next; then the client; the API serves once all are up.
	addr := net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.HTTP))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("starting HTTP API on %s: %w", addr, err)
	}
	a.httpAddr = ln.Addr().String()
	if a.tls.HTTP() {
		ln = tls.NewListener(ln, a.tls.IncomingHTTP())
	}
	if cfg.Server.Enabled {
		if err := a.startServer(root, dataDir); err != nil {
			ln.Close()
			return err
		}
	}
	if cfg.Client.Enabled {
		if err := a.startClient(root, dataDir); err != nil {
			ln.Close()
			return err
		}
	}

	var api Server
	if a.server != nil {
		api = a.server
	} else {
		api = &clientAPIServer{c: a.client}
	}
	var opts []HTTPOption
	if a.client != nil {
		opts = append(opts, WithLocalClient(a.client))
	}
	if a.tls != nil {
		opts = append(opts, WithOutgoingTLS(a.tls.OutgoingHTTP()))
	}
	httpLogger := root.Named("http")
	a.httpServer = newHTTPServerWithLimit(NewHTTPHandler(api, cfg, httpLogger, opts...), httpLogger, cfg.Limits.HTTPMaxConnsPerClient)
	a.httpDone = make(chan struct{})
	go func() {
		defer close(a.httpDone)
		if err := a.httpServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("HTTP server stopped", "error", err)
		}
	}()
	a.logger.Info("agent started", "http_addr", a.httpAddr, "rpc_addr", a.RPCAddr(),
		"data_dir", dataDir, "region", cfg.Region, "datacenter", cfg.Datacenter,
		"server", cfg.Server.Enabled, "client", cfg.Client.Enabled,
		"bootstrap_expect", cfg.Server.BootstrapExpect, "dev", cfg.DevMode, "enable_debug", cfg.EnableDebug)
	return nil
}

func (a *Agent) startServer(root hclog.Logger, dataDir string) error {
	cfg := a.config
	srvCfg := &server.Config{
		Name:                 cfg.NodeNameOrHost(),
		Region:               cfg.Region,
		Datacenter:           cfg.Datacenter,
		DataDir:              filepath.Join(dataDir, "server"),
		BindAddr:             cfg.BindAddr,
		RPCPort:              cfg.Ports.RPC,
		BootstrapExpect:      cfg.Server.BootstrapExpect,
		RetryJoin:            cfg.joinAddrs(),
		RetryInterval:        cfg.Server.RetryInterval,
		NumSchedulers:        cfg.Server.NumSchedulers,
		JobTrackedVersions:   cfg.Server.JobTrackedVersions,
		HeartbeatGrace:       cfg.Server.HeartbeatGrace,
		HeartbeatMinTTL:      cfg.Server.MinHeartbeatTTL,
		FailoverHeartbeatTTL: cfg.Server.FailoverHeartbeatTTL,
		DrainGC: server.DrainGCConfig{
			GCInterval:            cfg.Server.JobGCInterval,
			EvalGCThreshold:       cfg.Server.EvalGCThreshold,
			JobGCThreshold:        cfg.Server.JobGCThreshold,
			NodeGCThreshold:       cfg.Server.NodeGCThreshold,
			DeploymentGCThreshold: cfg.Server.DeploymentGCThreshold,
		},
		NodeQuarantine:           cfg.Server.NodeQuarantine,
		Logger:                   root, // the server names its own logger "server"
		ACLEnabled:               cfg.ACL.Enabled,
		ACLTokenMinExpirationTTL: cfg.ACL.TokenMinExpirationTTL,
		ACLTokenMaxExpirationTTL: cfg.ACL.TokenMaxExpirationTTL,
		TLS:                      a.tls,
	}
	if err := a.autoscaleProviders(srvCfg, dataDir); err != nil {
		return err
	}
	cfg.Limits.serverRPCLimits(srvCfg)
	if cfg.serverConfigHook != nil {
		cfg.serverConfigHook(srvCfg)
	}
	srv, err := server.NewServer(srvCfg)
	if err != nil {
		return fmt.Errorf("starting server: %w", err)
	}
	a.server = srv
	return nil
}

// startClient starts the client; with a server in this agent it talks to
// that server in process (plus any servers configured).
func (a *Agent) startClient(root hclog.Logger, dataDir string) error {
	cfg := a.config
	cc := &client.Config{
		DataDir:        dataDir,
		Servers:        cfg.clientServers(),
		Region:         cfg.Region,
		Datacenter:     cfg.Datacenter,
		NodeName:       cfg.NodeNameOrHost(),
		NodeClass:      cfg.Client.NodeClass,
		NodePool:       cfg.Client.NodePool,
		Meta:           cfg.Client.Meta,
		HTTPAddr:       a.httpAddr,
		HTTPTLS:        a.tls.HTTP(),
		RawExecEnabled: cfg.PluginEnabled(PluginRawExec),
		MockEnabled:    cfg.PluginEnabled(PluginMock),
		Exec:           cfg.execConfig(),
		Docker:         cfg.dockerConfig(),
		GCInterval:     cfg.Client.GCInterval,
		GCRetention:    cfg.Client.GCRetention,
		GCMaxAllocs:    cfg.Client.GCMaxAllocs,
		MaxKillTimeout: cfg.Client.MaxKillTimeout,
		Readiness:      cfg.Client.Readiness,
		// A dev agent throws its data dir away: its tasks go with it.
		DestroyOnShutdown: cfg.DevMode,
		Logger:            root,
	}
	if a.server != nil {
		cc.LocalServer = a.server
	}
	if a.tls.RPC() {
		cc.TLS = a.tls.OutgoingRPC()
	}
	if a.tls.HTTP() {
		cc.HTTPTLSFiles = &template.TLSFiles{CAFile: cfg.TLS.CAFile, CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile}
	}
	if ip := net.ParseIP(cfg.BindAddr); ip != nil && !ip.IsUnspecified() {
		cc.NetworkAddr = ip.String()
	}
	if r := cfg.Client.Reserved; r != nil {
		cc.Reserved = &structs.NodeReservedResources{
			Cpu:      structs.NodeReservedCpuResources{CpuShares: int64(r.CPU)},
			Memory:   structs.NodeReservedMemoryResources{MemoryMB: int64(r.MemoryMB)},
			Disk:     structs.NodeReservedDiskResources{DiskMB: int64(r.DiskMB)},
			Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: r.ReservedPorts},
		}
	}
	cc.CPUTotalCompute, cc.MemoryTotalMB = cfg.Client.CPUTotalCompute, cfg.Client.MemoryTotalMB
	cc.Network = fingerprint.NetworkConfig{Interface: cfg.Client.NetworkInterface,
		MinDynamicPort: cfg.Client.MinDynamicPort, MaxDynamicPort: cfg.Client.MaxDynamicPort}
	for _, hn := range cfg.Client.HostNetworks {
		cc.Network.HostNetworks = append(cc.Network.HostNetworks, fingerprint.HostNetwork(hn))
	}
	for _, hv := range cfg.Client.HostVolumes {
		if cc.HostVolumes == nil {
			cc.HostVolumes = map[string]*structs.ClientHostVolumeConfig{}
		}
		cc.HostVolumes[hv.Name] = &structs.ClientHostVolumeConfig{Name: hv.Name, Path: hv.Path, ReadOnly: hv.ReadOnly}
	}
	if cfg.clientConfigHook != nil {
		cfg.clientConfigHook(cc)
	}
	// consul-template (the client's template renderer) logs through Go's
	// standard logger: into the agent's log, at the levels it names.
	template.RedirectLibraryLog(root.Named("template"))
	c, err := client.New(cc)
	if err != nil {
		return fmt.Errorf("starting client: %w", err)
	}
	a.client = c
	return nil
}

// clientAPIServer serves the HTTP API of a client-only agent: every
// request is an RPC to the client's servers (with failover).
type clientAPIServer struct{ c *client.Client }

func (s *clientAPIServer) RPC(method string, args, reply any) error {
	return s.c.RPC(method, args, reply)
}

func (s *clientAPIServer) Leader() string {
	var leader string
	if err := s.c.RPC("Status.Leader", &structs.GenericRequest{}, &leader); err != nil {
		return ""
	}
	return leader
}

func (s *clientAPIServer) IsLeader() bool { return false }

func (s *clientAPIServer) RPCAddr() string { return "" }

func (s *clientAPIServer) Members() []*structs.ServerMember {
	var resp structs.ServerMembersResponse
	if err := s.c.RPC("Status.Members", &structs.GenericRequest{}, &resp); err != nil {
		return nil
	}
	return resp.Members
}

// HTTPAddr returns the address the HTTP API listens on (host:port).
func (a *Agent) HTTPAddr() string { return a.httpAddr }

// HTTPURL returns the HTTP API's base URL, using 127.0.0.1 for an
// unspecified bind address.
func (a *Agent) HTTPURL() string {
	scheme := "http://"
	if a.tls.HTTP() {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(a.httpAddr)
	if err != nil {
		return scheme + a.httpAddr
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port)
}

// RPCAddr returns the server's RPC (and Raft) address, or "" for a
// client-only agent.
func (a *Agent) RPCAddr() string {
	if a.server == nil {
		return ""
	}
	return a.server.RPCAddr()
}

// DataDir returns the data directory in use (for -dev, the temporary one).
func (a *Agent) DataDir() string { return a.dataDir }

// Server returns the agent's server (nil for a client-only agent).
func (a *Agent) Server() *server.Server { return a.server }

// Client returns the agent's client (nil when the client is not enabled).
// The HTTP layer streams task logs through Client().TaskLogs.
func (a *Agent) Client() *client.Client { return a.client }

// Config returns the agent's configuration; callers must not modify it.
func (a *Agent) Config() *Config { return a.config }

// Reload applies what may change in a running agent from cfg, its
// configuration read again (on SIGHUP, as Nomad): the tls block's CA,
// certificate and key files, used for every connection made from then on.
// Anything else that differs needs a restart and is left as it is.
func (a *Agent) Reload(cfg *Config) error {
	if err := a.tls.Reload(cfg.TLS); err != nil {
		return err
	}
	a.config.TLS.CAFile, a.config.TLS.CertFile, a.config.TLS.KeyFile = cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile
	a.config.TLS.RPCUpgradeMode = cfg.TLS.RPCUpgradeMode
	return nil
}

// Shutdown stops the HTTP API (waiting briefly for in-flight requests),
// then the client (its tasks keep running, except in -dev), then the
// server, and removes a dev data dir. It is idempotent and
// returns the first error.
func (a *Agent) Shutdown() error {
	a.shutdownOnce.Do(func() {
		a.logger.Info("shutting down")
		var errs []error
		if a.httpServer != nil {
			ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
			if err := a.httpServer.Shutdown(ctx); err != nil {
				// Blocking queries outlived the grace period: cut them off.
				_ = a.httpServer.Close()
			}
			cancel()
			<-a.httpDone
		}
		if a.client != nil {
			if err := a.client.Shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("client shutdown: %w", err))
			}
		}
		if a.server != nil {
			if err := a.server.Shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("server shutdown: %w", err))
			}
		}
		if a.devDataDir != "" {
			// A host volume still mounted below it (a task that outlived
			// the client) must not have its files removed through it.
			if err := allocdir.UnmountUnder(a.devDataDir); err != nil {
				errs = append(errs, fmt.Errorf("dev data dir not removed: %w", err))
			} else if err := os.RemoveAll(a.devDataDir); err != nil {
				errs = append(errs, fmt.Errorf("removing dev data dir: %w", err))
			}
		}
		if a.releaseProfiling != nil {
			a.releaseProfiling()
		}
		a.shutdownErr = errors.Join(errs...)
		a.logger.Info("shutdown complete")
	})
	return a.shutdownErr
}

// autoscaleProviders builds the server's autoscale providers from the
// autoscale_provider blocks (local only; Validate refused the rest).
func (a *Agent) autoscaleProviders(srvCfg *server.Config, dataDir string) error {
	cfg := a.config.Server
	srvCfg.AutoscaleInterval = cfg.AutoscaleInterval
	for _, p := range cfg.AutoscaleProviders {
		dir := p.Dir
		if dir == "" {
			dir = filepath.Join(dataDir, "autoscale", p.Name)
		}
		servers := func() []string { return slices.Clone(p.Servers) }
		if len(p.Servers) == 0 {
			servers = func() []string {
				if a.server == nil {
					return nil
				}
				var out []string
				for _, m := range a.server.Members() {
					if m.Status == server.MemberStatusAlive || m.Status == "" {
						out = append(out, m.RPCAddr)
					}
				}
				return out
			}
		}
		prov, err := autoscaler.NewLocal(autoscaler.LocalConfig{Dir: dir, Binary: p.Binary, Servers: servers,
			Quota: p.Quota, ExtraConfig: p.ClientConfig})
		if err != nil {
			return fmt.Errorf("server autoscale_provider %q: %w", p.Name, err)
		}
		if srvCfg.AutoscaleProviders == nil {
			srvCfg.AutoscaleProviders = map[string]autoscaler.Provider{}
		}
		srvCfg.AutoscaleProviders[p.Name] = prov
	}
	return nil
}
