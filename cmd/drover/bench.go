package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/agent/sim"
	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/bench"
)

func benchCommands() []*command {
	return []*command{{name: "bench", synopsis: "Run a named benchmark scenario against a cluster over the HTTP API", run: runBench}}
}

// simSource adapts a simulator to bench.NodeSource.
type simSource struct{ s *sim.Sim }

func (s simSource) Status() string {
	st := s.s.Stats()
	return fmt.Sprintf("sim: %d/%d nodes, %d running", st.Registered, st.Nodes, st.AllocsRunning)
}

func (s simSource) Stop() { s.s.Stop() }

func (s simSource) Final() string { return s.s.Stats().String() }

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func runBench(e *env, args []string) int {
	var (
		addrs       listFlag
		sf          simFlags
		useSim      boolFlag
		list        bool
		mdHeader    bool
		scenario    string
		nodes       int
		jobs, count int
		ports       int
		services    bool
		spreadDCs   int
		duration    time.Duration
		pids        listFlag
		dataDirs    listFlag
		asJSON      bool
		markdownOut string
		timeout     time.Duration
		concurrency int
		stale       bool
		cleanup     bool
		taskRunFor  string
		perfOut     string
		logLevel    string
		killAfter   time.Duration
		baseline    time.Duration
		verify      bool
		jsonOut     string
		summarize   bool
		httpTLS     api.TLSConfig
		token       string
	)
	fs := newFlagSet(e, "bench", "-scenario <name> [options]",
		"Run a benchmark scenario against a cluster through the HTTP API (Nomad's Go client, so a\n"+
			"Nomad cluster works too), with nodes from a simulator started in this process (-sim-servers)\n"+
			"or from a `drover sim` already running, and print what it measured.")
	fs.Var(&addrs, "address", "agent HTTP address(es), http:// or https://, comma-separated; repeatable (default env DROVER_ADDR, then NOMAD_ADDR)")
	registerTLSFlags(fs, e, &httpTLS)
	fs.StringVar(&token, "token", api.TokenFromEnv(e.getenv),
		"ACL secret for the HTTP API, a management token on a cluster with ACLs (env DROVER_TOKEN, then NOMAD_TOKEN)")
	fs.StringVar(&scenario, "scenario", "", "scenario to run (see -list)")
	fs.BoolVar(&list, "list", false, "list the scenarios and exit")
	fs.BoolVar(&mdHeader, "markdown-header", false, "print the header of the -markdown-out table and exit")
	fs.Var(&useSim, "sim", "start the simulated nodes in this process (default: true when -sim-servers is given)")
	sf.register(fs, "sim-servers", false)
	fs.IntVar(&nodes, "nodes", 0, "override the scenario's node count")
	fs.Int64Var(&sf.cpu, "cpu", 0, "override the scenario's node CPU (MHz)")
	fs.Int64Var(&sf.memory, "memory", 0, "override the scenario's node memory (MB)")
	fs.IntVar(&jobs, "jobs", 0, "override the scenario's job count")
	fs.IntVar(&count, "count", 0, "override the scenario's allocations per job")
	fs.IntVar(&ports, "ports", -1, "dynamic ports per allocation, in each group's network block (default: the scenario's;\n"+
		"the *-ports scenarios have 1)")
	fs.BoolVar(&services, "services", false, "give each group a native service, registered by the simulator as allocations run\n"+
		"(the *-services scenarios have one)")
	fs.IntVar(&spreadDCs, "spread", 0, "put the nodes in N datacenters (dc1..dcN) and give each group a spread over ${node.datacenter}\n"+
		"(the *-spread scenarios have 3; a drover sim already running needs -dc dc1,...,dcN)")
	fs.DurationVar(&duration, "duration", 0, "override the duration of churn and heartbeats")
	fs.Var(&pids, "server-pids", "PIDs of the local servers, in the order of -address, comma-separated")
	fs.Var(&dataDirs, "data-dirs", "the servers' data directories (Raft data size), comma-separated")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.StringVar(&markdownOut, "markdown-out", "", "also append the result as a Markdown table row to this file (see bench.MarkdownHeader)")
	fs.DurationVar(&timeout, "timeout", bench.DefaultTimeout, "how long to wait for placement and running (and for the nodes)")
	fs.IntVar(&concurrency, "concurrency", 0, fmt.Sprintf("job writes in flight (default: the scenario's, else %d)", bench.DefaultConcurrency))
	fs.BoolVar(&stale, "stale", true, "let any server answer the watches (spreads them over the servers)")
	fs.BoolVar(&cleanup, "cleanup", true, "purge the scenario's jobs at the end")
	fs.StringVar(&taskRunFor, "task-run-for", bench.DefaultRunFor, "mock_driver run_for of the jobs' tasks (long keeps them running)")
	fs.StringVar(&perfOut, "perf", "", "record a perf profile of the servers (needs -server-pids) and of this process into this file")
	fs.StringVar(&logLevel, "log-level", "warn", "log level of the in-process simulator")
	fs.DurationVar(&killAfter, "kill-leader-after", 0, "SIGKILL the leader this long into the measured window and measure the election\n"+
		"(needs -server-pids in the order of -address; 0: the scenario's, e.g. c1m-small-kill)")
	fs.DurationVar(&baseline, "baseline-placed", 0, "placed time of the same scenario without the kill: with the kill, placement must\n"+
		"finish within it plus the election time plus 2 s")
	fs.BoolVar(&verify, "verify", true, "read every job's allocations at the end: no duplicate names, each job at its count")
	fs.StringVar(&jsonOut, "json-out", "", "also write the result as JSON to this file")
	fs.BoolVar(&summarize, "summarize", false, "summarize the result files given as arguments (written with -json-out) and exit:\n"+
		"per label (each file's directory name) and scenario, each figure's median (min-max); see scripts/bench-repeat.sh")
	if code, ok := parseFlags(fs, args, math.MaxInt32); !ok {
		return code
	}
	if summarize {
		return summarizeResults(e, fs.Args())
	}
	if fs.NArg() > 0 {
		return usagef(e, "bench takes no arguments (except with -summarize); got %q", fs.Args())
	}
	if mdHeader {
		fmt.Fprintln(e.stdout, bench.MarkdownHeader)
		return 0
	}
	if list {
		t := newTable(e.stdout)
		for _, s := range bench.Scenarios() {
			t.row(s.Name, s.Description)
		}
		t.flush()
		return 0
	}
	sc, err := bench.Lookup(scenario)
	if err != nil {
		return usagef(e, "%v", err)
	}
	if nodes > 0 {
		sc.Nodes.Count = nodes
	}
	if sf.cpu > 0 {
		sc.Nodes.CPU = sf.cpu
	}
	if sf.memory > 0 {
		sc.Nodes.MemoryMB = sf.memory
	}
	if jobs > 0 {
		sc.Jobs = jobs
	}
	if count > 0 {
		sc.Count = count
	}
	if services && !sc.Services {
		sc.Services = true
		sc.Description += " [a native service per group]"
	}
	if spreadDCs > 0 && spreadDCs != sc.SpreadDatacenters {
		sc.SpreadDatacenters = spreadDCs
		sc.Nodes.Datacenters = bench.SpreadDatacenters(spreadDCs)
		sc.Description = fmt.Sprintf("%s [a spread over ${node.datacenter} in %d datacenters]", sc.Description, spreadDCs)
	}
	if ports >= 0 && ports != sc.DynamicPorts {
		sc.DynamicPorts = ports
		sc.Description = fmt.Sprintf("%s [%d dynamic port(s) per allocation]", sc.Description, ports)
	}
	if killAfter > 0 && sc.KillLeaderAfter == 0 {
		sc.Targets = bench.Targets{}
		sc.Description = fmt.Sprintf("%s [the leader SIGKILLed %v in]", sc.Description, killAfter)
	}
	if killAfter > 0 {
		sc.KillLeaderAfter = killAfter
	}
	if nodes > 0 || sf.cpu > 0 || sf.memory > 0 || jobs > 0 || count > 0 {
		// The targets are for the scenario as named.
		sc.Targets = bench.Targets{}
		sc.Description = fmt.Sprintf("%s [changed: %d nodes of %d MHz / %d MB; %d x %d]",
			sc.Description, sc.Nodes.Count, sc.Nodes.CPU, sc.Nodes.MemoryMB, sc.Jobs, sc.Count)
	}
	if len(addrs) == 0 {
		addrs = listFlag{api.AddressFromEnv(e.getenv)}
	}
	serverPIDs := make([]int, 0, len(pids))
	for _, p := range pids {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return usagef(e, "-server-pids: %q is not a PID", p)
		}
		serverPIDs = append(serverPIDs, n)
	}
	if sc.KillLeaderAfter > 0 && killServerHook == nil && len(serverPIDs) < len(addrs) {
		return usagef(e, "killing the leader needs -server-pids, one per -address, in the same order")
	}
	if sc.KillLeaderAfter > 0 && len(addrs) < 2 {
		return usagef(e, "killing the leader needs the HTTP addresses of at least two servers (-address)")
	}
	var httpsConf *tls.Config
	if !httpTLS.IsZero() {
		if httpsConf, err = httpTLS.ClientConfig(); err != nil {
			return usagef(e, "%v", err)
		}
	}
	if !useSim.set {
		useSim.value = len(sf.servers) > 0
	}
	if useSim.value && len(sf.servers) == 0 {
		return usagef(e, "-sim needs -sim-servers (the servers' RPC addresses)")
	}

	progress := e.stdout
	if asJSON {
		progress = e.stderr
	}
	cfg := &bench.Config{
		Addresses: addrs, TLS: httpsConf, Token: token, Scenario: sc, Region: sf.region, NodePrefix: sim.NodeListPrefix(sf.target, sf.idPrefix),
		RunFor: taskRunFor, Concurrency: concurrency, Stale: stale, Timeout: timeout, Duration: duration,
		ServerPIDs: serverPIDs, DataDirs: dataDirs, Cleanup: cleanup,
		Progress: progress, InPlace: isTerminal(progress), PerfOut: perfOut,
		Command:        "drover bench " + strings.Join(args, " "),
		BaselinePlaced: baseline, KillServer: killServerHook, NoVerify: !verify,
		Nomad: sf.target == sim.TargetNomad,
	}
	if len(sf.dcs) > 0 {
		cfg.Datacenter = sf.dcs[0]
	}
	if useSim.value {
		cfg.StartNodes = func(ctx context.Context, shape bench.NodeShape) (bench.NodeSource, error) {
			scfg, err := sf.config(simLogger(logLevel, e.stderr))
			if err != nil {
				return nil, err
			}
			scfg.Nodes, scfg.CPU, scfg.MemoryMB, scfg.DiskMB = shape.Count, shape.CPU, shape.MemoryMB, shape.Disk
			if len(shape.Datacenters) > 0 {
				scfg.Datacenters = shape.Datacenters
			}
			s, err := sim.New(scfg)
			if err != nil {
				return nil, err
			}
			s.Start()
			wctx, cancel := context.WithTimeout(ctx, max(timeout, bench.DefaultNodeTimeout))
			defer cancel()
			if err := s.WaitRegistered(wctx); err != nil {
				s.Stop()
				return nil, fmt.Errorf("%v (%s)", err, s.Stats())
			}
			return simSource{s}, nil
		}
	}

	stopProfile, err := startCPUProfile(e, sf.cpuProfile)
	if err != nil {
		return errorf(e, "starting the CPU profile: %v", err)
	}
	defer stopProfile()
	sigCh, stopSignals := e.signals()
	defer stopSignals()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := bench.Run(ctx, cfg)
	if res != nil {
		if asJSON {
			_ = res.WriteJSON(e.stdout)
		} else {
			_ = res.WriteText(e.stdout)
		}
		if jsonOut != "" {
			if werr := writeJSONFile(jsonOut, res); werr != nil {
				fmt.Fprintf(e.stderr, "Error writing %s: %v\n", jsonOut, werr)
			}
		}
		if markdownOut != "" {
			if werr := appendLine(markdownOut, res.MarkdownRow()); werr != nil {
				fmt.Fprintf(e.stderr, "Error writing %s: %v\n", markdownOut, werr)
			}
		}
	}
	if err != nil {
		return errorf(e, "running %s: %v", sc.Name, err)
	}
	return 0
}

// killServerHook, if set (tests), stops server i (its position in
// -address) in place of a SIGKILL to its PID.
var killServerHook func(i int) error

// writeJSONFile writes the result as JSON to path.
func writeJSONFile(path string, res *bench.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := res.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// boolFlag is a boolean flag that records whether it was given.
type boolFlag struct{ set, value bool }

func (b *boolFlag) String() string   { return strconv.FormatBool(b.value) }
func (b *boolFlag) IsBoolFlag() bool { return true }
func (b *boolFlag) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	b.set, b.value = true, x
	return nil
}

// appendLine appends one line to the file at path, creating it.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// summarizeResults prints the summary of result files, labelled by their
// directories' names.
func summarizeResults(e *env, files []string) int {
	if len(files) == 0 {
		return usagef(e, "-summarize needs result files (written with -json-out)")
	}
	runs := make([]bench.Labeled, 0, len(files))
	for _, f := range files {
		r, err := bench.ReadResultFile(f)
		if err != nil {
			return errorf(e, "reading a result: %v", err)
		}
		runs = append(runs, bench.Labeled{Label: filepath.Base(filepath.Dir(f)), Result: r})
	}
	if err := bench.WriteSummary(e.stdout, bench.SummarizeRuns(runs)); err != nil {
		return errorf(e, "%v", err)
	}
	return 0
}
