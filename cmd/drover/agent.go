package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/drover-project/drover/agent"
	"github.com/drover-project/drover/version"
)

func agentCommands() []*command {
	return []*command{{name: "agent", synopsis: "Run a Drover agent (server; -dev for a single-node cluster)", run: runAgent}}
}

// runAgent starts an agent and runs until SIGINT or SIGTERM, then shuts
// down cleanly; a second signal during shutdown exits at once with 1.
func runAgent(e *env, args []string) int {
	fs := newFlagSet(e, "agent", "[options]",
		"Run a Drover agent: a server (-server), a client (-client), or both in one process\n"+
			"with -dev. Settings come from the defaults, then each -config file in order, then the\n"+
			"flags given; see README.md's Configuration section.")
	cfg, err := agent.LoadConfigFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "Error loading configuration:\n%v\n", indent(err.Error()))
		return 1
	}
	for _, f := range cfg.Files {
		fmt.Fprintf(e.stdout, "==> Loaded configuration from %s\n", f)
	}
	fmt.Fprintln(e.stdout, "==> Starting Drover agent...")

	// Subscribe before starting so a signal during startup is not lost.
	sigCh, stop := e.signals()
	defer stop()

	a, err := agent.NewAgent(cfg, agent.NewLogger(cfg, e.stderr))
	if err != nil {
		fmt.Fprintf(e.stderr, "Error starting agent: %v\n", err)
		return 1
	}
	printAgentBanner(e, a)
	if e.agentStarted != nil {
		e.agentStarted(a)
	}

	if e.hangups != nil {
		hup, stopHup := e.hangups()
		defer stopHup()
		go reloadOnHangup(e, hup, args, a)
	}
	return awaitShutdown(e, sigCh, a.Shutdown)
}

// reloadOnHangup reads the agent's configuration again (the same files
// and flags) on each SIGHUP and applies what may change while it runs:
// the TLS certificate, key and CA files (Agent.Reload). It returns when
// hup is closed or stops delivering.
func reloadOnHangup(e *env, hup <-chan os.Signal, args []string, a *agent.Agent) {
	for range hup {
		fmt.Fprintln(e.stdout, "==> Caught signal: hangup; reloading the configuration")
		fs := newFlagSet(e, "agent", "[options]", "")
		cfg, err := agent.LoadConfigFlags(fs, args)
		if err == nil {
			err = a.Reload(cfg)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "==> Reload failed (the configuration in use stays): %v\n", err)
			continue
		}
		fmt.Fprintln(e.stdout, "==> Reloaded the TLS certificates")
	}
}

// awaitShutdown waits for a signal, then runs shutdown. A second signal
// before shutdown returns abandons it: the exit code is 1 and the process
// exits without cleaning up.
func awaitShutdown(e *env, sigCh <-chan os.Signal, shutdown func() error) int {
	sig := <-sigCh
	fmt.Fprintf(e.stdout, "==> Caught signal: %v; shutting down (signal again to force exit)\n", sig)
	done := make(chan error, 1)
	go func() { done <- shutdown() }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(e.stderr, "Error during shutdown: %v\n", err)
			return 1
		}
		fmt.Fprintln(e.stdout, "==> Shutdown complete")
		return 0
	case sig := <-sigCh:
		fmt.Fprintf(e.stderr, "==> Caught second signal: %v; exiting without a clean shutdown\n", sig)
		return 1
	}
}

func printAgentBanner(e *env, a *agent.Agent) {
	cfg := a.Config()
	fmt.Fprintln(e.stdout, "==> Drover agent configuration:")
	fmt.Fprintln(e.stdout)
	t := newTable(e.stdout)
	t.row("       HTTP Addr:", a.HTTPURL())
	t.row("        RPC Addr:", a.RPCAddr())
	if cfg.Server.Enabled {
		t.row("          Server:", fmt.Sprintf("true (bootstrap_expect = %d)", cfg.Server.BootstrapExpect))
	} else {
		t.row("          Server:", "false")
	}
	t.row("          Client:", strconv.FormatBool(cfg.Client.Enabled))
	t.row("          Region:", fmt.Sprintf("%s (DC: %s)", cfg.Region, cfg.Datacenter))
	t.row("       Log Level:", strings.ToUpper(cfg.LogLevel))
	t.row("         Version:", version.String())
	if cfg.DevMode {
		t.row("        Dev Mode:", "true (data is discarded on exit)")
	}
	if cfg.EnableDebug {
		t.row("           Debug:", "true (pprof at "+a.HTTPURL()+"/debug/pprof/)")
	}
	t.flush()
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, "==> Drover agent started! Log data will stream in below:")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
