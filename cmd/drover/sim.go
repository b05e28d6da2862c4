package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/agent/sim"
	"github.com/drover-project/drover/internal/tlsutil"
)

func simCommands() []*command {
	return []*command{{name: "sim", synopsis: "Simulate many client nodes against real servers (scale testing)", run: runSim}}
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// kvFlag is a repeatable key=value flag.
type kvFlag map[string]string

func (m kvFlag) String() string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (m kvFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	m[k] = val
	return nil
}

// simFlags are the node simulator's settings, shared by `drover sim` and
// `drover bench` (which starts a simulator in-process).
type simFlags struct {
	servers         listFlag
	target          string
	nodes           int
	cpu, memory     int64
	disk            int64
	dcs             listFlag
	classes         string
	attrs           kvFlag
	meta            kvFlag
	reportDelay     time.Duration
	heartbeatJitter float64
	runFor          time.Duration
	idPrefix        string
	region          string
	updateInterval  time.Duration
	sessions        int
	registerConc    int
	noWatch         bool
	cpuProfile      string
	// tls: the tls block of the client agents the simulator plays.
	tlsCA, tlsCert, tlsKey string
}

// register adds the flags; prefix names the server list flag ("servers"
// for drover sim, "sim-servers" for drover bench). withShape adds the
// node count and resources (bench takes them from its scenario).
func (f *simFlags) register(fs *flag.FlagSet, serversFlag string, withShape bool) {
	f.attrs, f.meta = kvFlag{}, kvFlag{}
	fs.Var(&f.servers, serversFlag, "server RPC addresses host:port, comma-separated; repeatable")
	targetFlag := "target"
	if serversFlag != "servers" {
		targetFlag = "sim-target"
	}
	fs.StringVar(&f.target, targetFlag, sim.TargetDrover, `the servers' kind: "drover", or "nomad" (Nomad's client RPCs; node IDs are UUIDs)`)
	if withShape {
		fs.IntVar(&f.nodes, "nodes", 100, "number of nodes to simulate")
		fs.Int64Var(&f.cpu, "cpu", sim.DefaultCPU, "CPU of each node in MHz")
		fs.Int64Var(&f.memory, "memory", sim.DefaultMemoryMB, "memory of each node in MB")
		fs.Int64Var(&f.disk, "disk", sim.DefaultDiskMB, "disk of each node in MB")
	}
	fs.Var(&f.dcs, "dc", "datacenter(s) of the nodes, assigned round-robin (default dc1)")
	fs.StringVar(&f.classes, "classes", "", `node class mix, e.g. "web:3,batch:1" (weights) or "a,b"`)
	fs.Var(f.attrs, "attr", "node attribute key=value added to the fingerprinted ones; repeatable")
	fs.Var(f.meta, "node-meta", "node metadata key=value; repeatable")
	fs.DurationVar(&f.reportDelay, "report-delay", 100*time.Millisecond, "delay before a new allocation is reported running (and a stopped one complete)")
	fs.Float64Var(&f.heartbeatJitter, "heartbeat-jitter", sim.DefaultHeartbeatJitter, "heartbeats go at TTL/2 less up to this fraction of the TTL at random")
	fs.DurationVar(&f.runFor, "run-for", 0, "run time of batch tasks whose mock_driver config sets no run_for (0: done at once)")
	fs.StringVar(&f.idPrefix, "id-prefix", sim.DefaultIDPrefix, "node IDs and names are <prefix>-<index>")
	fs.StringVar(&f.region, "region", "", "region (default global)")
	fs.DurationVar(&f.updateInterval, "update-interval", sim.DefaultUpdateInterval, "how often the batched allocation updates of all nodes are sent")
	fs.IntVar(&f.sessions, "sessions", sim.DefaultSessions, "RPC clients shared by the nodes (one yamux session per server each)")
	fs.IntVar(&f.registerConc, "register-concurrency", sim.DefaultRegisterConcurrency, "registrations in flight")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of this process (simulator included) to this file")
	fs.StringVar(&f.tlsCA, "tls-ca-file", "", "with -tls-cert-file and -tls-key-file: dial the servers with TLS (their tls { rpc = true }), checking them against this CA")
	fs.StringVar(&f.tlsCert, "tls-cert-file", "", "the client certificate the simulated nodes present (client.<region>.drover)")
	fs.StringVar(&f.tlsKey, "tls-key-file", "", "the key of -tls-cert-file")
	fs.BoolVar(&f.noWatch, "no-watch", false, "nodes never watch their allocations (measures what the watches cost the servers; placed work never runs)")
}

// config returns the simulator configuration.
func (f *simFlags) config(logger hclog.Logger) (*sim.Config, error) {
	classes, err := sim.ParseClasses(f.classes)
	if err != nil {
		return nil, err
	}
	var tlsConf *tls.Config
	if f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" {
		c, err := tlsutil.New(tlsutil.Config{EnableRPC: true, CAFile: f.tlsCA, CertFile: f.tlsCert, KeyFile: f.tlsKey,
			VerifyServerHostname: true}, f.region)
		if err != nil {
			return nil, err
		}
		tlsConf = c.OutgoingRPC()
	}
	return &sim.Config{
		TLS:     tlsConf,
		Servers: f.servers, Target: f.target, Nodes: f.nodes, CPU: f.cpu, MemoryMB: f.memory, DiskMB: f.disk,
		Datacenters: f.dcs, Classes: classes, Attributes: f.attrs, Meta: f.meta,
		ReportDelay: f.reportDelay, HeartbeatJitter: f.heartbeatJitter, RunFor: f.runFor,
		IDPrefix: f.idPrefix, Region: f.region, UpdateInterval: f.updateInterval,
		Sessions: f.sessions, RegisterConcurrency: f.registerConc, NoWatch: f.noWatch, Logger: logger,
	}, nil
}

// startCPUProfile starts a Go CPU profile into path ("" does nothing);
// the returned function stops it and closes the file, reporting a failure
// on stderr.
func startCPUProfile(e *env, path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(e.stderr, "Error writing %s: %v\n", path, err)
		}
	}, nil
}

func simLogger(level string, out io.Writer) hclog.Logger {
	l := hclog.LevelFromString(level)
	if l == hclog.NoLevel {
		l = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "drover", Level: l, Output: out, TimeFormat: "2006-01-02T15:04:05.000Z0700"})
}

// runSim simulates nodes until SIGINT or SIGTERM, printing a status line
// every -status-interval.
func runSim(e *env, args []string) int {
	var sf simFlags
	var statusEvery time.Duration
	var logLevel string
	fs := newFlagSet(e, "sim", "-servers host:port[,...] [options]",
		"Simulate many client nodes in one process against real servers, over the client RPCs:\n"+
			"each node registers, heartbeats, watches its allocations and reports them running\n"+
			"(and batch work complete after its mock_driver run_for). Stop with Ctrl-C.")
	sf.register(fs, "servers", true)
	fs.DurationVar(&statusEvery, "status-interval", 5*time.Second, "how often to print a status line")
	fs.StringVar(&logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	cfg, err := sf.config(simLogger(logLevel, e.stderr))
	if err != nil {
		return usagef(e, "%v", err)
	}
	stopProfile, err := startCPUProfile(e, sf.cpuProfile)
	if err != nil {
		return errorf(e, "starting the CPU profile: %v", err)
	}
	defer stopProfile()
	sigCh, stopSignals := e.signals()
	defer stopSignals()
	s, err := sim.New(cfg)
	if err != nil {
		return usagef(e, "%v", err)
	}
	start := time.Now()
	s.Start()
	fmt.Fprintf(e.stdout, "==> Simulating %d nodes (%s-*) against %s\n", cfg.Nodes, sf.idPrefix, strings.Join(cfg.Servers, ", "))
	if statusEvery <= 0 {
		statusEvery = 5 * time.Second
	}
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			fmt.Fprintf(e.stdout, "%s %s\n", time.Since(start).Round(time.Second), s.Stats())
		case sig := <-sigCh:
			fmt.Fprintf(e.stdout, "==> Caught signal: %v; stopping the simulated nodes\n", sig)
			s.Stop()
			fmt.Fprintf(e.stdout, "%s %s\n", time.Since(start).Round(time.Second), s.Stats())
			return 0
		}
	}
}
