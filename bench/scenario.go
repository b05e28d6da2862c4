package bench

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind is what a scenario does once its nodes are ready.
type Kind string

const (
	// KindPlace registers Jobs jobs of Count allocations each at once and
	// waits until every allocation is placed and running.
	KindPlace Kind = "place"
	// KindChurn registers, scales and stops jobs continuously for the
	// duration.
	KindChurn Kind = "churn"
	// KindIdle registers nothing: the nodes only heartbeat for the
	// duration; nodes wrongly marked down are counted at the end.
	KindIdle Kind = "idle"
	// KindJoinStorm registers Jobs system jobs, then starts the nodes
	// (all joining at once) and waits until every node runs each job's
	// allocation; it counts the evaluations written (joinstorm.go).
	KindJoinStorm Kind = "join-storm"
)

// NodeShape is what the scenario needs of its nodes: how many, and each
// one's resources (CPU in MHz, memory and disk in MB).
type NodeShape struct {
	Count               int
	CPU, MemoryMB, Disk int64
	// Datacenters, when set, are the nodes' datacenters, assigned
	// round-robin (a scenario with SpreadDatacenters); else the
	// simulator's own (dc1 by default).
	Datacenters []string
}

// Scenario is one named benchmark.
type Scenario struct {
	Name        string
	Description string
	Kind        Kind
	Nodes       NodeShape
	// Jobs and Count: KindPlace registers Jobs jobs of Count allocations.
	// KindChurn keeps about Jobs jobs alive, each of up to Count.
	Jobs, Count int
	// Task resources: CPU in MHz, memory in MB.
	TaskCPU, TaskMemoryMB int
	// DynamicPorts is the number of dynamic ports each allocation asks
	// for in its group's network block (0: no network block).
	DynamicPorts int
	// Services gives each group a native service (provider "nomad", on
	// its first dynamic port when it has one), which the simulator
	// registers when an allocation runs, as client agents do.
	Services bool
	// Service makes the jobs service jobs (batch jobs otherwise); Update
	// gives each service job an update block (max_parallel 1, Nomad's
	// defaults otherwise), so its registration starts a deployment.
	Service, Update bool
	// SpreadDatacenters, if positive, puts the nodes in datacenters
	// dc1..dcN and gives each group a spread over ${node.datacenter}
	// (weight 50, no targets: even), the jobs running in all of them.
	SpreadDatacenters int
	// Duration of a churn or idle scenario.
	Duration time.Duration
	// Writers is how many job writes are in flight (0: DefaultConcurrency).
	Writers int
	// KillLeaderAfter, if positive, SIGKILLs the leader this long into
	// the measured window (Config.KillLeaderAfter).
	KillLeaderAfter time.Duration
	// Targets, for the report (zero: none).
	Targets Targets
}

// Targets are the figures a scenario is expected to meet.
type Targets struct {
	Placed, Running time.Duration
	EvalP99         time.Duration
	LeaderRSSBytes  int64
	// LeaderCPUPercent is of one core.
	LeaderCPUPercent float64
}

// AllocTotal is the number of allocations a place scenario waits for.
func (s Scenario) AllocTotal() int { return s.Jobs * s.Count }

var c1mSmall = Scenario{
	Name: "c1m-small", Kind: KindPlace,
	Description: "5,000 nodes, 1,000 jobs x 100 submitted concurrently",
	Nodes:       NodeShape{Count: 5000, CPU: 4000, MemoryMB: 8192, Disk: 100000},
	Jobs:        1000, Count: 100, TaskCPU: 10, TaskMemoryMB: 10,
	Targets: Targets{Placed: 10 * time.Second, EvalP99: 2 * time.Second},
}

var burst = Scenario{
	Name: "burst", Kind: KindPlace,
	Description: "500 nodes, one batch job of 5,000 (mock_driver, 10 MHz, 10 MB)",
	Nodes:       NodeShape{Count: 500, CPU: 4000, MemoryMB: 8192, Disk: 100000},
	Jobs:        1, Count: 5000, TaskCPU: 10, TaskMemoryMB: 10,
	Targets: Targets{Placed: 400 * time.Millisecond, Running: 2 * time.Second, LeaderRSSBytes: 200 << 20},
}

var scenarios = []Scenario{
	burst,
	WithPorts(burst, 1),
	WithServices(WithPorts(burst, 1)),
	{
		Name: "dense", Kind: KindPlace,
		Description: "1 node big enough for 5,000 allocations, one job of 5,000",
		Nodes:       NodeShape{Count: 1, CPU: 60000, MemoryMB: 60000, Disk: 1000000},
		Jobs:        1, Count: 5000, TaskCPU: 10, TaskMemoryMB: 10,
		Targets: Targets{Placed: 500 * time.Millisecond},
	},
	c1mSmall,
	WithPorts(c1mSmall, 1),
	WithServices(WithPorts(c1mSmall, 1)),
	withLeaderKill(c1mSmall, 5*time.Second),
	WithSpread(c1mSmall, 3),
	WithService(c1mSmall),
	WithUpdate(WithService(c1mSmall)),
	{
		Name: "churn", Kind: KindChurn,
		Description: "2,000 nodes, 16 writers registering, scaling and stopping jobs, each waiting for its evaluation",
		Nodes:       NodeShape{Count: 2000, CPU: 4000, MemoryMB: 8192, Disk: 100000},
		Jobs:        200, Count: 50, TaskCPU: 10, TaskMemoryMB: 10,
		Duration: 2 * time.Minute, Writers: 16,
	},
	{
		Name: "join-storm", Kind: KindJoinStorm,
		Description: "10 system jobs registered, then 5,000 nodes join at once; evaluations written and time until every system allocation runs",
		Nodes:       NodeShape{Count: 5000, CPU: 4000, MemoryMB: 8192, Disk: 100000},
		Jobs:        10, Count: 1, TaskCPU: 10, TaskMemoryMB: 10,
	},
	{
		Name: "heartbeats", Kind: KindIdle,
		Description: "10,000 idle nodes heartbeating; leader CPU and false node-down",
		Nodes:       NodeShape{Count: 10000, CPU: 4000, MemoryMB: 8192, Disk: 100000},
		Duration:    10 * time.Minute,
		Targets:     Targets{LeaderCPUPercent: 30},
	},
}

// withLeaderKill is s with the leader SIGKILLed after the given time,
// named "<name>-kill". Its only target is relative: the placed time may
// grow by at most the election time plus KillSlack over a run without
// the kill (Config.BaselinePlaced; scripts/bench-cluster.sh passes the
// placed time of "<name>" when it ran first in the same invocation).
func withLeaderKill(s Scenario, after time.Duration) Scenario {
	s.Name += "-kill"
	s.Description += fmt.Sprintf(", the leader SIGKILLed %v in", after)
	s.KillLeaderAfter = after
	s.Targets = Targets{}
	return s
}

// WithPorts is s with n dynamic ports per allocation, named
// "<name>-ports" (to compare placement with and without ports). Its
// targets are s's: ports must not make placement slower.
func WithPorts(s Scenario, n int) Scenario {
	s.Name += "-ports"
	s.Description += fmt.Sprintf(", %d dynamic port(s) per allocation", n)
	s.DynamicPorts = n
	return s
}

// WithSpread is s with its nodes in n datacenters (dc1..dcN) and a
// spread over ${node.datacenter} in every group, named "<name>-spread"
// (to compare placement with and without a spread). Its targets are s's:
// the spread must not make placement much slower.
func WithSpread(s Scenario, n int) Scenario {
	s.Name += "-spread"
	s.Description += fmt.Sprintf(", a spread over ${node.datacenter} in %d datacenters", n)
	s.SpreadDatacenters = n
	s.Nodes.Datacenters = SpreadDatacenters(n)
	return s
}

// SpreadDatacenters returns the datacenters dc1..dcN.
func SpreadDatacenters(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("dc%d", i+1)
	}
	return out
}

// WithService is s with service jobs instead of batch jobs, named
// "<name>-service": the baseline of WithUpdate.
func WithService(s Scenario) Scenario {
	s.Name += "-service"
	s.Description += ", as service jobs"
	s.Service = true
	return s
}

// WithUpdate is s (service jobs) with an update block on every job, named
// "<name>-update": each registration then creates a deployment, which the
// scheduler and the leader's deployment watcher track. Placing a new job's
// allocations is not paced by max_parallel, so its targets are s's.
func WithUpdate(s Scenario) Scenario {
	s.Name += "-update"
	s.Description += ", each with an update block (a deployment per job)"
	s.Service, s.Update = true, true
	return s
}

// WithServices is s with a native service per group, registered by the
// simulator for every running allocation, named "<name>-services". Its
// targets are s's.
func WithServices(s Scenario) Scenario {
	s.Name += "-services"
	s.Description += ", a native service per group (registered as allocations run)"
	s.Services = true
	return s
}

// Scenarios returns the named scenarios, sorted by name.
func Scenarios() []Scenario {
	out := append([]Scenario(nil), scenarios...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the scenario with the given name.
func Lookup(name string) (Scenario, error) {
	var names []string
	for _, s := range scenarios {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return Scenario{}, fmt.Errorf("unknown scenario %q; known: %s", name, strings.Join(names, ", "))
}
