package structs

import (
	"slices"
	"strconv"
)

// PortKey is one port on one host address.
type PortKey struct {
	Addr string
	Port int
}

// PortUsage is the ports taken on one node: those its reserved blocks hold
// back, per address, and those its allocations were given. The scheduler
// builds one for each node it examines for a group that asks for ports,
// and the plan applier one for each node a plan places ports on; both
// apply the same rule through it: a port is given at most once per
// address. It is not safe for concurrent use.
type PortUsage struct {
	aliases []aliasAddr // the node's host networks, in its order
	addrs   []addrState // each distinct address once
	used    map[PortKey]int32
	// lo and hi are the node's dynamic port range.
	lo, hi int
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
func NewPortUsage(n *Node) *PortUsage {
	u := &PortUsage{}
	u.lo, u.hi = n.NodeResources.DynamicPortRange()
	if n.NodeResources == nil {
		return u
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
	return u
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
	if u.used[PortKey{addr, port}] > 0 {
		return true
	}
	return u.isReserved(addr, port)
}

// Add records a's ports as taken.
func (u *PortUsage) Add(a *Allocation) {
	eachAllocPort(a, func(_, addr string, port int) bool {
		if u.used == nil {
			u.used = map[PortKey]int32{}
		}
		k := PortKey{addr, port}
		if u.used[k]++; u.used[k] == 1 && port >= u.lo && port <= u.hi && !u.isReserved(addr, port) {
			u.countInRange(addr, 1)
		}
		return true
	})
}

// Remove releases a's ports.
func (u *PortUsage) Remove(a *Allocation) {
	eachAllocPort(a, func(_, addr string, port int) bool {
		k := PortKey{addr, port}
		n, held := u.used[k]
		if !held {
			return true
		}
		if n <= 1 {
			delete(u.used, k)
			if port >= u.lo && port <= u.hi && !u.isReserved(addr, port) {
				u.countInRange(addr, -1)
			}
		} else {
			u.used[k] = n - 1
		}
		return true
	})
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
