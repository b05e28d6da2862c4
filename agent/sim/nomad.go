package sim

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/drover-project/drover/structs"
)

// Targets: the kind of servers the simulated nodes talk to.
const (
	// TargetDrover: Drover servers (the default).
	TargetDrover = "drover"
	// TargetNomad: HashiCorp Nomad servers (measured with the same tool,
	// `drover bench -sim-target nomad`). The nodes speak Nomad's client
	// RPCs: see nomadTransport.
	TargetNomad = "nomad"
)

// Nomad's RPC protocol bytes (Nomad's helper/pool): a connection opened
// with nomadRPCMultiplexV2 carries a yamux session, and each stream on it
// starts with nomadRPCNomad, then msgpack RPC (net-rpc-msgpackrpc).
const (
	nomadRPCNomad       byte = 0x01
	nomadRPCMultiplexV2 byte = 0x06
)

// newNomadMuxTransport is the simulator's RPC client set up for Nomad's
// multiplexed RPC.
func newNomadMuxTransport() *muxTransport {
	t := newMuxTransport()
	t.proto = nomadRPCMultiplexV2
	t.streamPreamble = []byte{nomadRPCNomad}
	return t
}

// nomadNodeID is the ID of simulated node i for Nomad, whose state store
// indexes node IDs as UUIDs: the first 8 hex digits are derived from the
// prefix (NodeListPrefix), the last 12 are the index.
func nomadNodeID(prefix string, i int) string {
	h := sha256.Sum256([]byte("drover-sim-node/" + prefix))
	return fmt.Sprintf("%x-0000-4000-8000-%012x", h[0:4], i)
}

// NodeListPrefix is the node ID prefix shared by the nodes a Sim with
// this target and ID prefix simulates (to list them).
func NodeListPrefix(target, idPrefix string) string {
	if idPrefix == "" {
		idPrefix = DefaultIDPrefix
	}
	if target == TargetNomad {
		return nomadNodeID(idPrefix, 0)[:8]
	}
	return idPrefix + "-"
}

// The request and response shapes of Nomad's client RPCs, with only the
// fields the simulator sets or reads (Nomad's nomad/structs; its msgpack
// decoder leaves the fields not sent zero, and skips the fields it does
// not know). Embedded structs are encoded inline, as Nomad's are. None
// holds a time.Time (the one type whose encoding depends on the msgpack
// handle's TimeNotBuiltin, set in Nomad's, not in Drover's): with the
// rest, Drover's handle writes the bytes Nomad's would.

type nomadWriteRequest struct {
	Region    string
	AuthToken string
}

type nomadQueryOptions struct {
	Region        string
	MinQueryIndex uint64
	MaxQueryTime  time.Duration
	AllowStale    bool
	AuthToken     string
}

type nomadNode struct {
	ID, SecretID, Name, Datacenter, NodeClass, NodePool string
	Attributes, Meta                                    map[string]string
	NodeResources                                       *nomadNodeResources
	ReservedResources                                   *nomadNodeReservedResources
	Drivers                                             map[string]*nomadDriverInfo
	Status                                              string
	SchedulingEligibility                               string
	StatusUpdatedAt                                     int64
}

type nomadNodeResources struct {
	Cpu    struct{ CpuShares, TotalCpuCores int64 }
	Memory struct{ MemoryMB int64 }
	Disk   struct{ DiskMB int64 }
	// Networks: Nomad's scheduler places work only on nodes with a
	// network of the group's mode ("host" by default).
	Networks                       []*nomadNetwork
	NodeNetworks                   []*nomadNodeNetwork
	MinDynamicPort, MaxDynamicPort int
}

type nomadNetwork struct {
	Mode, Device, CIDR, IP string
	MBits                  int
}

type nomadNodeNetwork struct {
	Mode, Device string
	Speed        int
	Addresses    []nomadNodeNetworkAddress
}

type nomadNodeNetworkAddress struct{ Family, Alias, Address string }

type nomadNodeReservedResources struct {
	Cpu    struct{ CpuShares int64 }
	Memory struct{ MemoryMB int64 }
	Disk   struct{ DiskMB int64 }
}

type nomadDriverInfo struct {
	Attributes        map[string]string
	Detected, Healthy bool
	HealthDescription string
}

type nomadNodeRegisterRequest struct {
	Node *nomadNode
	nomadWriteRequest
}

type nomadNodeUpdateStatusRequest struct {
	NodeID, Status string
	UpdatedAt      int64
	nomadWriteRequest
}

type nomadNodeUpdateResponse struct {
	HeartbeatTTL time.Duration
	Index        uint64
}

type nomadNodeSpecificRequest struct {
	NodeID, SecretID string
	nomadQueryOptions
}

type nomadAllocsGetRequest struct {
	AllocIDs []string
	nomadQueryOptions
}

type nomadAllocUpdate struct {
	ID, NodeID                      string
	ClientStatus, ClientDescription string
	TaskStates                      map[string]*nomadTaskState
	ModifyTime                      int64
}

type nomadTaskState struct {
	State  string
	Failed bool
	Events []*nomadTaskEvent
}

type nomadTaskEvent struct {
	Type           string
	Time           int64
	DisplayMessage string
	Details        map[string]string
	ExitCode       int
}

type nomadAllocUpdateRequest struct {
	Alloc []*nomadAllocUpdate
	nomadWriteRequest
}

type nomadIndexResponse struct{ Index uint64 }

// The part of a Nomad job a simulated node reads (its task groups' tasks,
// to run them as the mock driver would).
type nomadJob struct {
	Type       string
	TaskGroups []*struct {
		Name  string
		Tasks []*struct {
			Name, Driver string
			Config       map[string]any
		}
	}
}

// decodeNomadJob reads the encoded Nomad job of an allocation into the
// few fields of a structs.Job that groupInfo needs.
func decodeNomadJob(b []byte, out *structs.Job) error {
	var j nomadJob
	if err := structs.Decode(b, &j); err != nil {
		return err
	}
	out.Type = j.Type
	for _, g := range j.TaskGroups {
		if g == nil {
			continue
		}
		tg := &structs.TaskGroup{Name: g.Name}
		for _, t := range g.Tasks {
			if t != nil {
				tg.Tasks = append(tg.Tasks, &structs.Task{Name: t.Name, Driver: t.Driver, Config: t.Config})
			}
		}
		out.TaskGroups = append(out.TaskGroups, tg)
	}
	return nil
}

// nomadTransport carries the simulator's RPCs (built with Drover's
// request types) to Nomad servers: each request is rewritten in Nomad's
// shape, and the answers read back into the replies the nodes expect.
// Client RPCs are authenticated with the node's secret ID as their token
// (Nomad requires it even with ACLs off); nomadNodeTransport supplies it
// where the request does not name its node.
type nomadTransport struct {
	inner Transport
}

// nomadNodeTransport is a node's view of a nomadTransport: its requests
// carry the node's secret.
type nomadNodeTransport struct {
	t      *nomadTransport
	secret string
}

func (t nomadNodeTransport) RPC(addr, method string, args, reply any) error {
	return t.t.call(addr, method, t.secret, args, reply)
}

func (t *nomadTransport) RPC(addr, method string, args, reply any) error {
	return t.call(addr, method, "", args, reply)
}

// nodeTransport returns the transport node uses: tr, or for Nomad tr with
// the node's secret.
func nodeTransport(tr Transport, node *structs.Node) Transport {
	if nt, ok := tr.(*nomadTransport); ok {
		return nomadNodeTransport{t: nt, secret: node.SecretID}
	}
	return tr
}

// errNomadRequest: the simulator sent a request nomadTransport cannot
// rewrite (a bug).
var errNomadRequest = errors.New("sim: no Nomad form for the request")

func (t *nomadTransport) call(addr, method, secret string, args, reply any) error {
	switch req := args.(type) {
	case *structs.NodeRegisterRequest:
		return t.register(addr, req, reply)
	case *structs.NodeUpdateStatusRequest:
		out := &nomadNodeUpdateStatusRequest{NodeID: req.NodeID, Status: req.Status, UpdatedAt: req.UpdatedAt,
			nomadWriteRequest: nomadWriteRequest{Region: req.Region, AuthToken: secretID(req.NodeID)}}
		return t.nodeUpdate(addr, method, out, reply)
	case *structs.NodeSpecificRequest:
		out := &nomadNodeSpecificRequest{NodeID: req.NodeID, SecretID: req.SecretID,
			nomadQueryOptions: nomadQuery(&req.QueryOptions, req.SecretID)}
		return t.inner.RPC(addr, method, out, reply)
	case *structs.AllocsGetRequest:
		if secret == "" {
			return fmt.Errorf("%w: %s without a node", errNomadRequest, method)
		}
		out := &nomadAllocsGetRequest{AllocIDs: req.AllocIDs, nomadQueryOptions: nomadQuery(&req.QueryOptions, secret)}
		return t.inner.RPC(addr, method, out, reply)
	case *structs.AllocUpdateRequest:
		if len(req.Alloc) == 0 || req.Alloc[0].NodeID == "" {
			return fmt.Errorf("%w: %s without a node", errNomadRequest, method)
		}
		// Nomad checks the first allocation's node; the token may be any
		// node's secret.
		out := &nomadAllocUpdateRequest{Alloc: make([]*nomadAllocUpdate, len(req.Alloc)),
			nomadWriteRequest: nomadWriteRequest{Region: req.Region, AuthToken: secretID(req.Alloc[0].NodeID)}}
		for i, a := range req.Alloc {
			out.Alloc[i] = nomadAllocFrom(a)
		}
		var resp nomadIndexResponse
		return t.inner.RPC(addr, method, out, &resp)
	}
	return fmt.Errorf("%w: %s with %T", errNomadRequest, method, args)
}

// register registers the node as Nomad's client does: initializing, then
// ready (Nomad places work only on ready nodes; a node already known keeps
// its status across Node.Register, so the update is needed either way).
// The reply carries the TTL of the second answer.
func (t *nomadTransport) register(addr string, req *structs.NodeRegisterRequest, reply any) error {
	n := nomadNodeFrom(req.Node)
	n.Status = structs.NodeStatusInit
	out := &nomadNodeRegisterRequest{Node: n, nomadWriteRequest: nomadWriteRequest{Region: req.Region}}
	if err := t.nodeUpdate(addr, "Node.Register", out, reply); err != nil {
		return err
	}
	ready := &nomadNodeUpdateStatusRequest{NodeID: n.ID, Status: structs.NodeStatusReady, UpdatedAt: time.Now().Unix(),
		nomadWriteRequest: nomadWriteRequest{Region: req.Region, AuthToken: n.SecretID}}
	return t.nodeUpdate(addr, "Node.UpdateStatus", ready, reply)
}

// nodeUpdate sends a node write and fills a *structs.NodeUpdateResponse.
func (t *nomadTransport) nodeUpdate(addr, method string, args, reply any) error {
	var resp nomadNodeUpdateResponse
	if err := t.inner.RPC(addr, method, args, &resp); err != nil {
		return err
	}
	out, ok := reply.(*structs.NodeUpdateResponse)
	if !ok {
		return fmt.Errorf("%w: %s answered into %T", errNomadRequest, method, reply)
	}
	*out = structs.NodeUpdateResponse{HeartbeatTTL: resp.HeartbeatTTL}
	out.Index = resp.Index
	return nil
}

func nomadQuery(q *structs.QueryOptions, token string) nomadQueryOptions {
	return nomadQueryOptions{Region: q.Region, MinQueryIndex: q.MinQueryIndex, MaxQueryTime: q.MaxQueryTime,
		AllowStale: q.AllowStale, AuthToken: token}
}

// nomadNodeFrom is a simulated node's registration in Nomad's shape.
func nomadNodeFrom(n *structs.Node) *nomadNode {
	out := &nomadNode{
		ID: n.ID, SecretID: n.SecretID, Name: n.Name, Datacenter: n.Datacenter, NodeClass: n.NodeClass,
		NodePool: n.NodePool, Attributes: n.Attributes, Meta: n.Meta, Status: n.Status,
		SchedulingEligibility: n.SchedulingEligibility, StatusUpdatedAt: n.StatusUpdatedAt,
		ReservedResources: &nomadNodeReservedResources{},
		Drivers:           make(map[string]*nomadDriverInfo, len(n.Drivers)),
	}
	if r := n.NodeResources; r != nil {
		out.NodeResources = &nomadNodeResources{MinDynamicPort: 20000, MaxDynamicPort: 32000}
		out.NodeResources.Cpu.CpuShares = r.Cpu.CpuShares
		out.NodeResources.Cpu.TotalCpuCores = int64(r.Cpu.TotalCpuCores)
		out.NodeResources.Memory.MemoryMB = r.Memory.MemoryMB
		out.NodeResources.Disk.DiskMB = r.Disk.DiskMB
		ip := n.Attributes["unique.network.ip-address"]
		out.NodeResources.Networks = []*nomadNetwork{{Mode: "host", Device: "eth0", CIDR: ip + "/32", IP: ip, MBits: 1000}}
		out.NodeResources.NodeNetworks = []*nomadNodeNetwork{{Mode: "host", Device: "eth0", Speed: 1000,
			Addresses: []nomadNodeNetworkAddress{{Family: "ipv4", Alias: "default", Address: ip}}}}
	}
	for name, d := range n.Drivers {
		out.Drivers[name] = &nomadDriverInfo{Attributes: d.Attributes, Detected: d.Detected,
			Healthy: d.Healthy, HealthDescription: d.HealthDescription}
	}
	return out
}

// nomadAllocFrom is a client allocation update in Nomad's shape.
func nomadAllocFrom(a *structs.Allocation) *nomadAllocUpdate {
	states := a.TaskStates.MustMap() // the simulator's own encoding
	out := &nomadAllocUpdate{ID: a.ID, NodeID: a.NodeID, ClientStatus: a.ClientStatus,
		ClientDescription: a.ClientDescription, ModifyTime: a.ModifyTime,
		TaskStates: make(map[string]*nomadTaskState, len(states))}
	for name, ts := range states {
		s := &nomadTaskState{State: ts.State, Failed: ts.Failed, Events: make([]*nomadTaskEvent, len(ts.Events))}
		for i, e := range ts.Events {
			ev := &nomadTaskEvent{Type: e.Type, Time: e.Time, DisplayMessage: e.DisplayMessage, ExitCode: e.ExitCode}
			if e.Type == structs.TaskTerminated {
				ev.Details = map[string]string{"exit_code": fmt.Sprint(e.ExitCode)}
			}
			s.Events[i] = ev
		}
		out.TaskStates[name] = s
	}
	return out
}
