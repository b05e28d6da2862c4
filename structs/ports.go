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
	node     *Node
	reserved map[string][]int // address -> sorted reserved ports
	used     map[PortKey]int32
}

// NewPortUsage returns the node's reserved ports, with no allocation's
// ports yet. A reserved port list that does not parse reserves nothing
// (the client checked it at start).
func NewPortUsage(n *Node) *PortUsage {
	u := &PortUsage{node: n, reserved: map[string][]int{}, used: map[PortKey]int32{}}
	var global []int
	if n.ReservedResources != nil {
		global, _ = ParsePortRanges(n.ReservedResources.Networks.ReservedHostPorts)
	}
	if n.NodeResources == nil {
		return u
	}
	for _, nn := range n.NodeResources.NodeNetworks {
		for _, a := range nn.Addresses {
			own, _ := ParsePortRanges(a.ReservedPorts)
			list := append(append(u.reserved[a.Address], global...), own...)
			slices.Sort(list)
			u.reserved[a.Address] = slices.Compact(list)
		}
	}
	return u
}

// InUse reports whether port is reserved or given on addr.
func (u *PortUsage) InUse(addr string, port int) bool {
	if u.used[PortKey{addr, port}] > 0 {
		return true
	}
	_, found := slices.BinarySearch(u.reserved[addr], port)
	return found
}

// Add records a's ports as taken.
func (u *PortUsage) Add(a *Allocation) {
	eachAllocPort(a, func(_, addr string, port int) bool {
		u.used[PortKey{addr, port}]++
		return true
	})
}

// Remove releases a's ports.
func (u *PortUsage) Remove(a *Allocation) {
	eachAllocPort(a, func(_, addr string, port int) bool {
		k := PortKey{addr, port}
		if u.used[k]--; u.used[k] <= 0 {
			delete(u.used, k)
		}
		return true
	})
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
