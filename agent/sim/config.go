package sim

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/clock"
	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// Defaults for Config fields left zero.
const (
	DefaultIDPrefix            = "sim"
	DefaultCPU                 = 4000   // MHz
	DefaultMemoryMB            = 8192   // MB
	DefaultDiskMB              = 100000 // MB
	DefaultUpdateInterval      = 150 * time.Millisecond
	DefaultUpdateMaxBatch      = 2000
	DefaultRegisterConcurrency = 32
	DefaultHeartbeatWorkers    = 64
	DefaultSessions            = 4
	DefaultMaxQueryTime        = 5 * time.Minute
	DefaultHeartbeatJitter     = 0.1
	DefaultRetryBase           = 250 * time.Millisecond
	DefaultRetryLimit          = 10 * time.Second
)

// Transport sends one RPC to the server at addr. *pool.Pool satisfies
// it; the Sim's own client (mux.go) is the default.
type Transport interface {
	RPC(addr, method string, args, reply any) error
}

// ClassWeight is one entry of the node class mix: Weight nodes out of
// every sum-of-weights get Class.
type ClassWeight struct {
	Class  string
	Weight int
}

// Config configures a Sim.
type Config struct {
	// Servers are server RPC addresses (host:port). Node i starts with
	// server i mod len(Servers) and fails over to the next.
	Servers []string
	// Transports, if set, carry the RPCs (tests); node i uses
	// Transports[i mod len]. Otherwise the Sim owns Sessions clients.
	Transports []Transport
	// TLS, if set, makes the simulator's own transports dial the servers
	// with TLS (their tls { rpc = true }), presenting a client
	// certificate.
	TLS *tls.Config
	// Sessions is how many RPC clients (so yamux sessions per server) the
	// nodes share.
	Sessions int
	// Target is the kind of servers: TargetDrover (default) or
	// TargetNomad.
	Target string

	Region string
	// Nodes is how many nodes to simulate.
	Nodes int
	// IDPrefix starts every node ID and name: "<prefix>-<index>".
	IDPrefix string
	// Datacenters are assigned round-robin (default dc1).
	Datacenters []string
	// Classes is the node class mix (nil: no class).
	Classes []ClassWeight
	// Per-node resources: CPU in MHz, memory and disk in MB.
	CPU, MemoryMB, DiskMB int64
	// Attributes are added to (or override) the fingerprinted ones.
	Attributes map[string]string
	Meta       map[string]string

	// ReportDelay is how long after a node first sees an allocation it
	// reports it running (and after a stop, complete).
	ReportDelay time.Duration
	// RunFor is the run time of a batch task whose mock_driver config has
	// no run_for. 0 means it completes as soon as it is reported running.
	RunFor time.Duration
	// HeartbeatJitter: each heartbeat is sent at TTL/2 less up to this
	// fraction of the TTL at random.
	HeartbeatJitter float64
	// UpdateInterval is how often the batched allocation updates of all
	// nodes are sent; UpdateMaxBatch caps the allocations per RPC (a
	// larger backlog is split into RPCs sent together).
	UpdateInterval time.Duration
	UpdateMaxBatch int
	// RegisterConcurrency bounds registrations in flight;
	// HeartbeatWorkers bounds heartbeats in flight.
	RegisterConcurrency int
	HeartbeatWorkers    int
	// MaxQueryTime bounds each blocking allocation watch.
	MaxQueryTime time.Duration
	// NoWatch: nodes register and heartbeat but never watch their
	// allocations (which then never run). It measures what the servers
	// pay for the nodes' blocking queries.
	NoWatch bool
	// RetryBase and RetryLimit bound the backoff after failed RPCs.
	RetryBase, RetryLimit time.Duration

	Clock  clock.Clock
	Logger hclog.Logger
}

func (c *Config) withDefaults() *Config {
	out := *c
	if out.Region == "" {
		out.Region = structs.DefaultRegion
	}
	if out.Target == "" {
		out.Target = TargetDrover
	}
	if out.IDPrefix == "" {
		out.IDPrefix = DefaultIDPrefix
	}
	if len(out.Datacenters) == 0 {
		out.Datacenters = []string{"dc1"}
	}
	setInt := func(p *int64, v int64) {
		if *p <= 0 {
			*p = v
		}
	}
	setInt(&out.CPU, DefaultCPU)
	setInt(&out.MemoryMB, DefaultMemoryMB)
	setInt(&out.DiskMB, DefaultDiskMB)
	setN := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	setN(&out.UpdateMaxBatch, DefaultUpdateMaxBatch)
	setN(&out.RegisterConcurrency, DefaultRegisterConcurrency)
	setN(&out.HeartbeatWorkers, DefaultHeartbeatWorkers)
	setN(&out.Sessions, DefaultSessions)
	setD := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	setD(&out.UpdateInterval, DefaultUpdateInterval)
	setD(&out.MaxQueryTime, DefaultMaxQueryTime)
	setD(&out.RetryBase, DefaultRetryBase)
	setD(&out.RetryLimit, DefaultRetryLimit)
	if out.HeartbeatJitter < 0 {
		out.HeartbeatJitter = 0
	}
	if out.Clock == nil {
		out.Clock = clock.Real{}
	}
	if out.Logger == nil {
		out.Logger = hclog.NewNullLogger()
	}
	return &out
}

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("no servers given"))
	}
	if c.Target != "" && c.Target != TargetDrover && c.Target != TargetNomad {
		errs = append(errs, fmt.Errorf("target %q: want %s or %s", c.Target, TargetDrover, TargetNomad))
	}
	if c.Nodes <= 0 {
		errs = append(errs, fmt.Errorf("nodes must be positive; got %d", c.Nodes))
	}
	if c.HeartbeatJitter >= 0.5 {
		errs = append(errs, fmt.Errorf("heartbeat jitter must be below 0.5 (a fraction of the TTL); got %v", c.HeartbeatJitter))
	}
	if msg := structs.ValidName(c.IDPrefix + "-0"); c.IDPrefix != "" && msg != "" {
		errs = append(errs, fmt.Errorf("id prefix %q: %s", c.IDPrefix, msg))
	}
	for _, dc := range c.Datacenters {
		if msg := structs.ValidName(dc); msg != "" {
			errs = append(errs, fmt.Errorf("datacenter %q: %s", dc, msg))
		}
	}
	for _, cw := range c.Classes {
		if cw.Weight <= 0 {
			errs = append(errs, fmt.Errorf("class %q: weight must be positive", cw.Class))
		}
	}
	if c.CPU < 0 || c.MemoryMB < 0 || c.DiskMB < 0 {
		errs = append(errs, errors.New("resources must not be negative"))
	}
	return errors.Join(errs...)
}

// ParseClasses parses a class mix: "web:3,batch:1" (three web nodes for
// every batch node), or "a,b" (equal weights). An empty string is no mix.
func ParseClasses(s string) ([]ClassWeight, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []ClassWeight
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, w, hasW := strings.Cut(part, ":")
		cw := ClassWeight{Class: name, Weight: 1}
		if hasW {
			n, err := strconv.Atoi(w)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("class %q: weight must be a positive integer", part)
			}
			cw.Weight = n
		}
		if name == "" {
			return nil, fmt.Errorf("class mix %q: empty class name", s)
		}
		out = append(out, cw)
	}
	return out, nil
}

// classOf returns the class of node i under the mix: classes take turns
// in blocks of their weights.
func classOf(mix []ClassWeight, i int) string {
	total := 0
	for _, cw := range mix {
		total += cw.Weight
	}
	if total == 0 {
		return ""
	}
	r := i % total
	for _, cw := range mix {
		if r < cw.Weight {
			return cw.Class
		}
		r -= cw.Weight
	}
	return ""
}

// NodeID returns the ID of simulated node i under prefix.
func NodeID(prefix string, i int) string {
	return fmt.Sprintf("%s-%06d", prefix, i)
}

// secretID is the node's secret: derived from its ID, so a restarted
// simulator re-registers the same nodes.
func secretID(nodeID string) string {
	h := sha256.Sum256([]byte("drover-sim-secret/" + nodeID))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// simVersion is the server version the nodes claim (Nomad gates some
// features on its clients' versions).
func simVersion(target string) string {
	if target == TargetNomad {
		return "1.10.5"
	}
	return "sim"
}

// versionAttr is the attribute naming the servers' version on a node.
func versionAttr(target string) string {
	if target == TargetNomad {
		return "nomad.version"
	}
	return "drover.version"
}

// buildNode returns the registration of node i.
func (c *Config) buildNode(i int, now time.Time) *structs.Node {
	id, name := NodeID(c.IDPrefix, i), NodeID(c.IDPrefix, i)
	if c.Target == TargetNomad {
		id = nomadNodeID(c.IDPrefix, i)
	}
	attrs := map[string]string{
		"kernel.name":                   "linux",
		"kernel.arch":                   "x86_64",
		"kernel.version":                "6.1.0",
		"os.name":                       "ubuntu",
		"os.version":                    "22.04",
		"cpu.arch":                      runtime.GOARCH,
		"cpu.numcores":                  "4",
		"cpu.frequency":                 strconv.FormatInt(c.CPU/4, 10),
		"cpu.totalcompute":              strconv.FormatInt(c.CPU, 10),
		"memory.totalbytes":             strconv.FormatInt(c.MemoryMB<<20, 10),
		"unique.hostname":               name,
		"unique.network.ip-address":     fmt.Sprintf("10.%d.%d.%d", (i>>16)&0xff, (i>>8)&0xff, i&0xff),
		versionAttr(c.Target):           simVersion(c.Target),
		"driver." + driverspec.MockName: "1",
	}
	for k, v := range c.Attributes {
		attrs[k] = v
	}
	meta := map[string]string{"simulated": "true"}
	for k, v := range c.Meta {
		meta[k] = v
	}
	node := &structs.Node{
		ID: id, SecretID: secretID(id), Name: name,
		Datacenter: c.Datacenters[i%len(c.Datacenters)],
		NodeClass:  classOf(c.Classes, i),
		NodePool:   "default",
		Attributes: attrs,
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: c.CPU, TotalCpuCores: 4},
			Memory: structs.NodeMemoryResources{MemoryMB: c.MemoryMB},
			Disk:   structs.NodeDiskResources{DiskMB: c.DiskMB},
			// One host network, as a client with the default route on
			// eth0 reports it, so jobs with ports place here.
			NodeNetworks: []*structs.NodeNetworkResource{{Mode: structs.NetworkModeHost, Device: "eth0",
				Addresses: []structs.NodeNetworkAddress{{Family: "ipv4", Alias: structs.DefaultHostNetwork, Address: attrs["unique.network.ip-address"]}}}},
		},
		ReservedResources: &structs.NodeReservedResources{},
		Meta:              meta,
		Drivers: map[string]*structs.DriverInfo{
			driverspec.MockName: {
				Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: now,
				Attributes: map[string]string{"driver." + driverspec.MockName: "1"},
			},
		},
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		StatusUpdatedAt:       now.Unix(),
	}
	node.ComputeClass()
	return node
}
