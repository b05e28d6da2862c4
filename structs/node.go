package structs

import "time"

// Node statuses.
const (
	NodeStatusInit         = "initializing"
	NodeStatusReady        = "ready"
	NodeStatusDown         = "down"
	NodeStatusDisconnected = "disconnected"
)

// Scheduling eligibility.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Node is a client machine that runs allocations.
type Node struct {
	ID                    string
	SecretID              string `json:"-" codec:"SecretID"` // hidden from JSON, but replicated through Raft
	Datacenter            string
	Name                  string
	HTTPAddr              string
	TLSEnabled            bool
	Attributes            map[string]string
	NodeResources         *NodeResources
	ReservedResources     *NodeReservedResources
	Links                 map[string]string
	Meta                  map[string]string
	NodeClass             string
	NodePool              string
	ComputedClass         string
	Drain                 bool
	DrainStrategy         *DrainStrategy
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	StatusUpdatedAt       int64
	Events                []*NodeEvent
	Drivers               map[string]*DriverInfo
	// HostVolumes are the client's host_volume blocks by name: the
	// directories groups may mount (structs/volume.go).
	HostVolumes map[string]*ClientHostVolumeConfig `json:",omitempty"`
	// Readiness is the client's readiness gate as it last reported it
	// (nil: a client that reports none, e.g. Nomad's). Drover's own field;
	// see NodeReadiness.
	Readiness   *NodeReadiness `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// NodeReadiness is the outcome of a client's readiness gate: its drivers
// fingerprinted healthy (at least one) and the operator's readiness
// command (client { readiness { ... } }), if any, exiting 0 within its
// timeout. A client registers as initializing, and reports ready only
// once the gate passed. The client reports a new value when the outcome
// or its message changes, not on every attempt, so Since is when the gate
// took this outcome (client clock), not the time of the latest attempt.
type NodeReadiness struct {
	// Passed: the gate passed; Message is empty.
	Passed bool
	// Message says why the gate has not passed: no healthy driver, or the
	// command's failure (its exit status or timeout, and the tail of its
	// output).
	Message string `json:",omitempty"`
	// Since is when the gate took this outcome.
	Since time.Time
	// Command is whether an operator command is part of the gate.
	Command bool `json:",omitempty"`
}

// NodeResources is what a node offers.
type NodeResources struct {
	Cpu    NodeCpuResources
	Memory NodeMemoryResources
	Disk   NodeDiskResources
	// NodeNetworks are the interfaces and addresses the client offers.
	NodeNetworks []*NodeNetworkResource `json:",omitempty"`
	// MinDynamicPort and MaxDynamicPort bound the dynamic ports given out
	// (0 means Nomad's defaults, 20000-32000).
	MinDynamicPort int `json:",omitempty"`
	MaxDynamicPort int `json:",omitempty"`
}

// NodeCpuResources: CpuShares is total MHz across cores.
type NodeCpuResources struct {
	CpuShares     int64
	TotalCpuCores uint16
}

// NodeMemoryResources in MB.
type NodeMemoryResources struct {
	MemoryMB int64
}

// NodeDiskResources in MB.
type NodeDiskResources struct {
	DiskMB int64
}

// NodeReservedResources is held back from scheduling for the OS and agent.
type NodeReservedResources struct {
	Cpu      NodeReservedCpuResources
	Memory   NodeReservedMemoryResources
	Disk     NodeReservedDiskResources
	Networks NodeReservedNetworkResources `json:",omitempty"`
}

// NodeReservedCpuResources in MHz.
type NodeReservedCpuResources struct {
	CpuShares int64
}

// NodeReservedMemoryResources in MB.
type NodeReservedMemoryResources struct {
	MemoryMB int64
}

// NodeReservedDiskResources in MB.
type NodeReservedDiskResources struct {
	DiskMB int64
}

// DriverInfo reports whether a driver is present and healthy on a node.
type DriverInfo struct {
	Attributes        map[string]string
	Detected          bool
	Healthy           bool
	HealthDescription string
	UpdateTime        time.Time
}

// DrainStrategy describes an active drain.
type DrainStrategy struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
	ForceDeadline    time.Time
	StartedAt        time.Time
}

// NodeEvent is a notable change in a node's life.
type NodeEvent struct {
	Message     string
	Subsystem   string
	Details     map[string]string
	Timestamp   time.Time
	CreateIndex uint64
}

// NodeListStub is the summary returned by node listings.
type NodeListStub struct {
	Address               string
	ID                    string
	Attributes            map[string]string `json:",omitempty"`
	Datacenter            string
	Name                  string
	NodeClass             string
	NodePool              string
	Version               string
	Drain                 bool
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	Drivers               map[string]*DriverInfo
	CreateIndex           uint64
	ModifyIndex           uint64
}

// Stub returns the listing form of the node.
func (n *Node) Stub() *NodeListStub {
	return &NodeListStub{
		Address: n.Attributes["unique.network.ip-address"], ID: n.ID,
		Datacenter: n.Datacenter, Name: n.Name, NodeClass: n.NodeClass,
		NodePool: n.NodePool, Version: n.Attributes["drover.version"],
		Drain: n.Drain, SchedulingEligibility: n.SchedulingEligibility,
		Status: n.Status, StatusDescription: n.StatusDescription,
		Drivers: n.Drivers, CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
}

// Ready reports whether the node can take new allocations: ready, eligible
// and not draining.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && !n.Drain && n.SchedulingEligibility == NodeSchedulingEligible
}

// TerminalStatus reports whether the node is down.
func (n *Node) TerminalStatus() bool { return n.Status == NodeStatusDown }

// Canonicalize fills defaults on a node being registered.
func (n *Node) Canonicalize() {
	if n.Status == "" {
		n.Status = NodeStatusInit
	}
	if n.SchedulingEligibility == "" {
		if n.Drain {
			n.SchedulingEligibility = NodeSchedulingIneligible
		} else {
			n.SchedulingEligibility = NodeSchedulingEligible
		}
	}
	if n.NodePool == "" {
		n.NodePool = "default"
	}
	if n.Datacenter == "" {
		n.Datacenter = "dc1"
	}
}

// Validate reports every problem with a node registration.
func (n *Node) Validate() error {
	v := &validator{}
	if msg := ValidName(n.ID); msg != "" {
		v.add("ID", "%s", msg)
	}
	if n.Name == "" || len(n.Name) > 256 {
		v.add("Name", "must be 1-256 characters")
	}
	if msg := ValidName(n.Datacenter); msg != "" {
		v.add("Datacenter", "%s", msg)
	}
	switch n.Status {
	case NodeStatusInit, NodeStatusReady, NodeStatusDown, NodeStatusDisconnected:
	default:
		v.add("Status", "unknown status %q", n.Status)
	}
	switch n.SchedulingEligibility {
	case NodeSchedulingEligible, NodeSchedulingIneligible:
	default:
		v.add("SchedulingEligibility", "must be eligible or ineligible; got %q", n.SchedulingEligibility)
	}
	if r := n.NodeResources; r != nil {
		if r.Cpu.CpuShares < 0 {
			v.add("NodeResources.Cpu.CpuShares", "must not be negative")
		}
		if r.Memory.MemoryMB < 0 {
			v.add("NodeResources.Memory.MemoryMB", "must not be negative")
		}
	}
	return v.err()
}

// ValidNodeStatus reports whether s is a status a client may report.
func ValidNodeStatus(s string) bool {
	switch s {
	case NodeStatusInit, NodeStatusReady, NodeStatusDown, NodeStatusDisconnected:
		return true
	}
	return false
}
