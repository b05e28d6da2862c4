package structs

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// PortKey is one port on one host address.
type PortKey struct {
	Addr string
	Port int
}

// Compare orders keys by address, then port.
func (k PortKey) Compare(o PortKey) int {
	if c := strings.Compare(k.Addr, o.Addr); c != 0 {
		return c
	}
	return cmp.Compare(k.Port, o.Port)
}

// AllocPorts is the ports one live allocation holds on its node.
type AllocPorts struct {
	AllocID string
	Ports   []PortKey
}

// NodePorts is what a node's live allocations hold of its ports, as the
// state store keeps it beside the node's usage (state/node_allocs.go), so
// that the scheduler and the plan applier read a node's taken ports
// without loading its allocations. Immutable once stored: a change makes a
// new NodePorts.
type NodePorts struct {
	// Holders are the live allocations that hold ports, sorted by ID.
	Holders []AllocPorts
	// Keys are every holder's ports, sorted; a port two allocations hold
	// (which only a forced write can cause) is there twice.
	Keys []PortKey
}

// HolderPorts returns the ports the allocation holds, or nil.
func (p *NodePorts) HolderPorts(allocID string) []PortKey {
	if p == nil {
		return nil
	}
	i, found := slices.BinarySearchFunc(p.Holders, allocID, func(h AllocPorts, id string) int { return strings.Compare(h.AllocID, id) })
	if !found {
		return nil
	}
	return p.Holders[i].Ports
}

// WithHolders returns p with changes applied: for each allocation ID, its
// new ports (nil or empty: it holds none any more). The last change of an
// ID wins. p is not modified; the result is nil when nothing is held, p
// itself when the changes leave every holder's ports as they were.
func (p *NodePorts) WithHolders(changes []AllocPorts) *NodePorts {
	var prev []AllocPorts
	if p != nil {
		prev = p.Holders
	}
	last := make(map[string][]PortKey, len(changes))
	for _, c := range changes {
		last[c.AllocID] = c.Ports
	}
	same := true
	for id, ports := range last {
		if !slices.Equal(p.HolderPorts(id), ports) {
			same = false
			break
		}
	}
	if same {
		return p // a change undone in the same write: keep the row
	}
	holders := make([]AllocPorts, 0, len(prev)+len(last))
	for _, h := range prev {
		if _, changed := last[h.AllocID]; !changed {
			holders = append(holders, h)
		}
	}
	for id, ports := range last {
		if len(ports) > 0 {
			holders = append(holders, AllocPorts{AllocID: id, Ports: ports})
		}
	}
	if len(holders) == 0 {
		return nil
	}
	slices.SortFunc(holders, func(a, b AllocPorts) int { return strings.Compare(a.AllocID, b.AllocID) })
	return NewNodePorts(holders)
}

// NewNodePorts returns the NodePorts of holders, which must be sorted by
// allocation ID and are kept.
func NewNodePorts(holders []AllocPorts) *NodePorts {
	n := 0
	for _, h := range holders {
		n += len(h.Ports)
	}
	keys := make([]PortKey, 0, n)
	for _, h := range holders {
		keys = append(keys, h.Ports...)
	}
	slices.SortFunc(keys, PortKey.Compare)
	return &NodePorts{Holders: holders, Keys: keys}
}

// AllocPortKeys returns the ports a holds on its node, sorted, or nil.
func AllocPortKeys(a *Allocation) []PortKey {
	var keys []PortKey
	eachAllocPort(a, func(_, addr string, port int) bool {
		keys = append(keys, PortKey{addr, port})
		return true
	})
	if len(keys) > 1 {
		slices.SortFunc(keys, PortKey.Compare)
	}
	return keys
}

// PortUsage is the ports taken on one node: those its reserved blocks hold
// back, per address, and those its allocations were given. The scheduler
// builds one for each node it examines for a group that asks for ports,
// and the plan applier one for each node a plan places ports on; both
// apply the same rule through it: a port is given at most once per
// address. It is not safe for concurrent use.
//
// The ports of the allocations already on the node come as the state
// store keeps them (NodePorts.Keys, sorted and shared, never modified);
// what the caller adds and removes on top is counted in delta, so that
// examining a node costs no copy of what it holds.
type PortUsage struct {
	aliases []aliasAddr // the node's host networks, in its order
	addrs   []addrState // each distinct address once
	base    []PortKey   // sorted; a port held twice is there twice
	delta   map[PortKey]int32
	// lo and hi are the node's dynamic port range.
	lo, hi int
	// The first addresses and host networks live here, so that a node
	// with one or two costs the scheduler a single allocation.
	addrsBuf   [2]addrState
	aliasesBuf [2]aliasAddr
}

// aliasAddr is a host network's address on the node.
type aliasAddr struct{ alias, addr, device string }

// addrState is what is known of one address: its reserved ports (sorted)
// and how many distinct ports of the dynamic range are reserved or used.
type addrState struct {
	addr     string
	reserved []int
	inRange  int
}

// NewPortUsage returns the node's host networks and reserved ports, with
// no allocation's ports yet. A reserved port list that does not parse
// reserves nothing (the client checked it at start). It copies what it
// needs of the node, so that later lookups stay within the PortUsage.
func NewPortUsage(n *Node) *PortUsage { return NewPortUsageOn(n, nil) }

// NewPortUsageOn is NewPortUsage with the ports of the node's allocations
// taken: held is the node's NodePorts as the state store keeps it (nil:
// none), shared and never modified.
func NewPortUsageOn(n *Node, held *NodePorts) *PortUsage {
	u := &PortUsage{}
	u.Init(n, held)
	return u
}

// Init sets u, which must be zero, as NewPortUsageOn(n, held) would, so
// that callers building many may allocate them together.
func (u *PortUsage) Init(n *Node, held *NodePorts) {
	u.addrs, u.aliases = u.addrsBuf[:0], u.aliasesBuf[:0]
	if held != nil {
		u.base = held.Keys
	}
	u.lo, u.hi = n.NodeResources.DynamicPortRange()
	if n.NodeResources == nil {
		return
	}
	var global []int
	if n.ReservedResources != nil && n.ReservedResources.Networks.ReservedHostPorts != "" {
		global, _ = ParsePortRanges(n.ReservedResources.Networks.ReservedHostPorts)
	}
	for _, nn := range n.NodeResources.NodeNetworks {
		for _, a := range nn.Addresses {
			u.aliases = append(u.aliases, aliasAddr{alias: a.Alias, addr: a.Address, device: nn.Device})
			st := u.state(a.Address)
			if st == nil {
				u.addrs = append(u.addrs, addrState{addr: a.Address, reserved: global})
				st = &u.addrs[len(u.addrs)-1]
			}
			if a.ReservedPorts != "" {
				own, _ := ParsePortRanges(a.ReservedPorts)
				list := append(append([]int(nil), st.reserved...), own...)
				slices.Sort(list)
				st.reserved = slices.Compact(list)
			}
		}
	}
	for i := range u.addrs {
		st := &u.addrs[i]
		if len(st.reserved) > 0 && !slices.IsSorted(st.reserved) {
			st.reserved = slices.Compact(slices.Sorted(slices.Values(st.reserved)))
		}
		first, _ := slices.BinarySearch(st.reserved, u.lo)
		end, _ := slices.BinarySearch(st.reserved, u.hi+1)
		st.inRange = end - first
	}
	for i, k := range u.base {
		if (i == 0 || u.base[i-1] != k) && u.countsInRange(k) {
			u.countInRange(k.Addr, 1)
		}
	}
}

func (u *PortUsage) state(addr string) *addrState {
	for i := range u.addrs {
		if u.addrs[i].addr == addr {
			return &u.addrs[i]
		}
	}
	return nil
}

// Address returns the node's first address on the named host network
// ("default" for the network_interface's) and its device.
func (u *PortUsage) Address(alias string) (addr, device string, ok bool) {
	for _, a := range u.aliases {
		if a.alias == alias {
			return a.addr, a.device, true
		}
	}
	return "", "", false
}

// FreeDynamic is the number of ports of the node's dynamic range that are
// neither reserved nor used on addr.
func (u *PortUsage) FreeDynamic(addr string) int {
	n := u.hi - u.lo + 1
	if st := u.state(addr); st != nil {
		n -= st.inRange
	}
	return n
}

// DynamicRange is the node's dynamic port range.
func (u *PortUsage) DynamicRange() (lo, hi int) { return u.lo, u.hi }

func (u *PortUsage) isReserved(addr string, port int) bool {
	st := u.state(addr)
	if st == nil {
		return false
	}
	_, found := slices.BinarySearch(st.reserved, port)
	return found
}

// InUse reports whether port is reserved or given on addr.
func (u *PortUsage) InUse(addr string, port int) bool {
	if u.count(PortKey{addr, port}) > 0 {
		return true
	}
	return u.isReserved(addr, port)
}

// count is how many holders k has.
func (u *PortUsage) count(k PortKey) int32 {
	n := u.delta[k]
	if len(u.base) > 0 {
		i, found := slices.BinarySearchFunc(u.base, k, PortKey.Compare)
		for ; found && i < len(u.base) && u.base[i] == k; i++ {
			n++
		}
	}
	return n
}

// countsInRange reports whether k, once held, counts against the dynamic
// range's free ports.
func (u *PortUsage) countsInRange(k PortKey) bool {
	return k.Port >= u.lo && k.Port <= u.hi && !u.isReserved(k.Addr, k.Port)
}

// take adds d (1 or -1) holders to k.
func (u *PortUsage) take(k PortKey, d int32) {
	before := u.count(k)
	if d < 0 && before <= 0 {
		return // not held: nothing to release
	}
	if u.delta == nil {
		u.delta = map[PortKey]int32{}
	}
	u.delta[k] += d
	switch after := before + d; {
	case before == 0 && after > 0 && u.countsInRange(k):
		u.countInRange(k.Addr, 1)
	case before > 0 && after == 0 && u.countsInRange(k):
		u.countInRange(k.Addr, -1)
	}
}

// Add records a's ports as taken.
func (u *PortUsage) Add(a *Allocation) {
	eachAllocPort(a, func(_, addr string, port int) bool {
		u.take(PortKey{addr, port}, 1)
		return true
	})
}

// Remove releases a's ports.
func (u *PortUsage) Remove(a *Allocation) {
	eachAllocPort(a, func(_, addr string, port int) bool {
		u.take(PortKey{addr, port}, -1)
		return true
	})
}

// RemoveKeys releases ports held by one allocation of the base (an
// allocation the caller stops or replaces).
func (u *PortUsage) RemoveKeys(keys []PortKey) {
	for _, k := range keys {
		u.take(k, -1)
	}
}

// countInRange counts a used port of the dynamic range on addr (an
// address the node no longer has is not counted: nothing is offered on
// it).
func (u *PortUsage) countInRange(addr string, d int) {
	if st := u.state(addr); st != nil {
		st.inRange += d
	}
}

// Collision returns, for the first of a's ports that is already taken,
// Nomad's reason ("reserved port collision http=8080"), or "" when all are
// free. Two ports of a on the same address collide too.
func (u *PortUsage) Collision(a *Allocation) string {
	var reason string
	var mine map[PortKey]bool
	eachAllocPort(a, func(label, addr string, port int) bool {
		k := PortKey{addr, port}
		if u.InUse(addr, port) || mine[k] {
			reason = "reserved port collision " + label + "=" + strconv.Itoa(port)
			return false
		}
		if mine == nil {
			mine = map[PortKey]bool{}
		}
		mine[k] = true
		return true
	})
	return reason
}

// HasPorts reports whether a was given any port.
func (a *Allocation) HasPorts() bool {
	found := false
	eachAllocPort(a, func(string, string, int) bool {
		found = true
		return false
	})
	return found
}

// eachAllocPort calls fn for every port a was given (group ports, then
// the tasks' legacy ones) until fn returns false.
func eachAllocPort(a *Allocation, fn func(label, addr string, port int) bool) {
	if a == nil || a.AllocatedResources == nil {
		return
	}
	for _, p := range a.AllocatedResources.Shared.Ports {
		if !fn(p.Label, p.HostIP, p.Value) {
			return
		}
	}
	for _, t := range a.AllocatedResources.Tasks {
		for _, n := range t.Networks {
			for _, list := range [][]Port{n.ReservedPorts, n.DynamicPorts} {
				for _, p := range list {
					if !fn(p.Label, n.IP, p.Value) {
						return
					}
				}
			}
		}
	}
}

// HostNetworkAddress returns the node's first address on the named host
// network ("default" for the network_interface's), and whether it has
// one.
func (n *Node) HostNetworkAddress(alias string) (string, string, bool) {
	if n.NodeResources == nil {
		return "", "", false
	}
	for _, nn := range n.NodeResources.NodeNetworks {
		for _, a := range nn.Addresses {
			if a.Alias == alias {
				return a.Address, nn.Device, true
			}
		}
	}
	return "", "", false
}
