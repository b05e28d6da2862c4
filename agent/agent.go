package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/hashicorp/go-hclog"
)

// httpShutdownTimeout bounds how long Shutdown waits for in-flight HTTP
// requests (blocking queries are cut off).
const httpShutdownTimeout = 5 * time.Second

// Agent is a running Drover agent: a server and the HTTP API in front of
// it. Create one with NewAgent and stop it with Shutdown.
type Agent struct {
	config *Config
	logger hclog.Logger

	server     *server.Server
	httpServer *http.Server
	httpAddr   string
	httpDone   chan struct{} // closed when Serve returns

	// dataDir is the data directory in use; devDataDir is the temporary
	// one created for -dev, removed on Shutdown ("" otherwise).
	dataDir    string
	devDataDir string

	shutdownOnce sync.Once
	shutdownErr  error
}

// NewAgent validates cfg, starts the server and then the HTTP API, and
// returns once both accept connections (it does not wait for a leader).
// logger may be nil: one is built from cfg writing to stderr. On error
// everything started is stopped again.
func NewAgent(cfg *Config, logger hclog.Logger) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Server.Enabled {
		return nil, errors.New("client-only agents are not implemented yet; enable the server (-server or -dev)")
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
	a.dataDir = dataDir
	if cfg.Client.Enabled {
		a.logger.Debug("client mode is not available yet; running the server only")
	}

	srvCfg := &server.Config{
		Name:            cfg.NodeNameOrHost(),
		Region:          cfg.Region,
		Datacenter:      cfg.Datacenter,
		DataDir:         filepath.Join(dataDir, "server"),
		BindAddr:        cfg.BindAddr,
		RPCPort:         cfg.Ports.RPC,
		BootstrapExpect: cfg.Server.BootstrapExpect,
		RetryJoin:       cfg.joinAddrs(),
		RetryInterval:   cfg.Server.RetryInterval,
		NumSchedulers:   cfg.Server.NumSchedulers,
		Logger:          root, // the server names its own logger "server"
	}
	if cfg.serverConfigHook != nil {
		cfg.serverConfigHook(srvCfg)
	}
	srv, err := server.NewServer(srvCfg)
	if err != nil {
		return fmt.Errorf("starting server: %w", err)
	}
	a.server = srv

	addr := net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.HTTP))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("starting HTTP API on %s: %w", addr, err)
	}
	a.httpAddr = ln.Addr().String()
	httpLogger := root.Named("http")
	a.httpServer = newHTTPServer(NewHTTPHandler(srv, cfg, httpLogger), httpLogger)
	a.httpDone = make(chan struct{})
	go func() {
		defer close(a.httpDone)
		if err := a.httpServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("HTTP server stopped", "error", err)
		}
	}()
	a.logger.Info("agent started", "http_addr", a.httpAddr, "rpc_addr", srv.RPCAddr(),
		"data_dir", dataDir, "region", cfg.Region, "datacenter", cfg.Datacenter,
		"bootstrap_expect", cfg.Server.BootstrapExpect, "dev", cfg.DevMode)
	return nil
}

// HTTPAddr returns the address the HTTP API listens on (host:port).
func (a *Agent) HTTPAddr() string { return a.httpAddr }

// HTTPURL returns the HTTP API's base URL, using 127.0.0.1 for an
// unspecified bind address.
func (a *Agent) HTTPURL() string {
	host, port, err := net.SplitHostPort(a.httpAddr)
	if err != nil {
		return "http://" + a.httpAddr
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// RPCAddr returns the server's RPC (and Raft) address.
func (a *Agent) RPCAddr() string { return a.server.RPCAddr() }

// DataDir returns the data directory in use (for -dev, the temporary one).
func (a *Agent) DataDir() string { return a.dataDir }

// Server returns the agent's server.
func (a *Agent) Server() *server.Server { return a.server }

// Config returns the agent's configuration; callers must not modify it.
func (a *Agent) Config() *Config { return a.config }

// Shutdown stops the HTTP API (waiting briefly for in-flight requests),
// then the server, and removes a dev data dir. It is idempotent and
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
		if a.server != nil {
			if err := a.server.Shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("server shutdown: %w", err))
			}
		}
		if a.devDataDir != "" {
			if err := os.RemoveAll(a.devDataDir); err != nil {
				errs = append(errs, fmt.Errorf("removing dev data dir: %w", err))
			}
		}
		a.shutdownErr = errors.Join(errs...)
		a.logger.Info("shutdown complete")
	})
	return a.shutdownErr
}
