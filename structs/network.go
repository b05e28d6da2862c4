package structs

import (
	"fmt"
	"strconv"
	"strings"
)

// Network types, in Nomad's shapes and JSON names. A group's network block
// asks for ports; the scheduler gives each dynamic port a value from the
// node's free range and records what it gave in the allocation's
// AllocatedSharedResources.Ports (and Networks, for Nomad's readers).

// Network modes a job may ask for.
const (
	NetworkModeHost   = "host"
	NetworkModeBridge = "bridge"
	NetworkModeNone   = "none"
)

// Nomad's defaults for a client's dynamic port range.
const (
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
	// MaxValidPort is the highest TCP/UDP port number.
	MaxValidPort = 65535
)

// NetworkResource is a group's (or, in the legacy form, a task's) network
// ask, and on an allocation what was granted on the node.
type NetworkResource struct {
	Mode          string
	Device        string
	CIDR          string
	IP            string
	Hostname      string `json:",omitempty"`
	MBits         int
	DNS           *DNSConfig
	ReservedPorts []Port
	DynamicPorts  []Port
}

// DNSConfig is the network block's dns block.
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// Port is one labelled port: Value is the static port (ReservedPorts) or,
// on an allocation, the dynamic port chosen; To is the port inside the
// task's network namespace (or the same as Value when 0); HostNetwork
// names the client's host network the port is taken on ("default" when
// empty).
type Port struct {
	Label       string
	Value       int
	To          int
	HostNetwork string
}

// AllocatedPortMapping is one port given to an allocation: Value on
// HostIP, mapped to To.
type AllocatedPortMapping struct {
	Label  string
	Value  int
	To     int
	HostIP string
}

// NodeNetworkResource is one network interface a client fingerprinted.
type NodeNetworkResource struct {
	Mode       string
	Device     string
	MacAddress string
	Speed      int
	Addresses  []NodeNetworkAddress
}

// NodeNetworkAddress is one address on a fingerprinted interface: Alias is
// the host network name it belongs to ("default" for the network_interface
// address), ReservedPorts a port list ("22,80,8000-8100") held back on it.
type NodeNetworkAddress struct {
	Family        string
	Alias         string
	Address       string
	ReservedPorts string
	Gateway       string
}

// NodeReservedNetworkResources is the client's reserved block's ports,
// held back on every address ("22,80,8000-8100").
type NodeReservedNetworkResources struct {
	ReservedHostPorts string
}

// DefaultHostNetwork is the host network a port is taken on when it names
// none: the address of the client's network_interface.
const DefaultHostNetwork = "default"

// canonicalize does what Nomad's server does to a network block: empty
// port lists become nil and a port without a host network names
// "default". n may be nil (validation reports it).
func (n *NetworkResource) canonicalize() {
	if n == nil {
		return
	}
	if len(n.ReservedPorts) == 0 {
		n.ReservedPorts = nil
	}
	if len(n.DynamicPorts) == 0 {
		n.DynamicPorts = nil
	}
	for i := range n.ReservedPorts {
		if n.ReservedPorts[i].HostNetwork == "" {
			n.ReservedPorts[i].HostNetwork = DefaultHostNetwork
		}
	}
	for i := range n.DynamicPorts {
		if n.DynamicPorts[i].HostNetwork == "" {
			n.DynamicPorts[i].HostNetwork = DefaultHostNetwork
		}
	}
}

// Copy returns a deep copy of the network resource.
func (n *NetworkResource) Copy() *NetworkResource {
	if n == nil {
		return nil
	}
	c := *n
	if n.DNS != nil {
		c.DNS = &DNSConfig{Servers: append([]string(nil), n.DNS.Servers...),
			Searches: append([]string(nil), n.DNS.Searches...), Options: append([]string(nil), n.DNS.Options...)}
	}
	c.ReservedPorts = append([]Port(nil), n.ReservedPorts...)
	c.DynamicPorts = append([]Port(nil), n.DynamicPorts...)
	return &c
}

// Copy returns a deep copy of the resources.
func (r *Resources) Copy() *Resources {
	if r == nil {
		return nil
	}
	c := *r
	c.Networks = copySlice(r.Networks, (*NetworkResource).Copy)
	return &c
}

// PortHostNetwork is the host network a port is taken on.
func (p Port) PortHostNetwork() string {
	if p.HostNetwork == "" {
		return DefaultHostNetwork
	}
	return p.HostNetwork
}

// HasPorts reports whether the group, with its tasks' legacy network
// blocks, asks for any port.
func (tg *TaskGroup) HasPorts() bool {
	for _, n := range tg.Networks {
		if n != nil && len(n.ReservedPorts)+len(n.DynamicPorts) > 0 {
			return true
		}
	}
	for _, t := range tg.Tasks {
		if t == nil || t.Resources == nil {
			continue
		}
		for _, n := range t.Resources.Networks {
			if n != nil && len(n.ReservedPorts)+len(n.DynamicPorts) > 0 {
				return true
			}
		}
	}
	return false
}

// validateNetworks checks the group's network block and its tasks' legacy
// ones: at most one block each, a mode Drover runs, no argument Drover
// does not act on, and port labels and static ports unique across the
// group and its tasks (as Nomad checks them).
func (tg *TaskGroup) validateNetworks(v *validator, p string) {
	labels := map[string]string{}  // label -> where first seen
	statics := map[string]string{} // host network/port -> where first seen
	if len(tg.Networks) > 1 {
		v.add(join(p, "Networks"), "only one network block is allowed per group; got %d", len(tg.Networks))
	}
	for i, n := range tg.Networks {
		validateNetwork(v, join(p, indexed("Networks", i)), n, false, labels, statics)
	}
	for ti, t := range tg.Tasks {
		if t == nil || t.Resources == nil {
			continue
		}
		rp := join(p, indexed("Tasks", ti)+".Resources")
		if len(t.Resources.Networks) > 1 {
			v.add(join(rp, "Networks"), "only one network block is allowed per task; got %d", len(t.Resources.Networks))
		}
		for i, n := range t.Resources.Networks {
			validateNetwork(v, join(rp, indexed("Networks", i)), n, true, labels, statics)
		}
	}
}

func validateNetwork(v *validator, np string, n *NetworkResource, legacy bool, labels, statics map[string]string) {
	if n == nil {
		v.add(np, "must not be null")
		return
	}
	switch {
	case n.Mode == "" || n.Mode == NetworkModeHost:
	case n.Mode == NetworkModeNone && !legacy:
		if len(n.ReservedPorts)+len(n.DynamicPorts) > 0 {
			v.add(join(np, "Mode"), "mode %q gives the group no ports; remove the port blocks or use mode \"host\"", n.Mode)
		}
	case n.Mode == NetworkModeBridge:
		v.add(join(np, "Mode"), "Drover does not support bridge networking (mode = \"bridge\": network namespaces with port mapping); use mode = \"host\"")
	case strings.HasPrefix(n.Mode, "cni/"):
		v.add(join(np, "Mode"), "Drover does not support CNI networks (mode = %q); use mode = \"host\"", n.Mode)
	case legacy:
		v.add(join(np, "Mode"), "a task's network block must be in host mode; got %q", n.Mode)
	default:
		v.add(join(np, "Mode"), "must be \"host\", \"bridge\", \"none\" or \"cni/<name>\"; got %q", n.Mode)
	}
	for _, u := range []struct {
		field, feature string
		set            bool
	}{
		{"MBits", "network bandwidth (mbits; Nomad ignores it since 0.12)", n.MBits != 0},
		{"Device", "choosing a network device in the network block (set the client's network_interface)", n.Device != ""},
		{"CIDR", "choosing a CIDR in the network block (use host_network on the port)", n.CIDR != ""},
		{"IP", "choosing an IP in the network block (use host_network on the port)", n.IP != ""},
		{"Hostname", "setting the hostname (it needs bridge networking)", n.Hostname != ""},
		{"DNS", "the dns block (it needs bridge networking)", n.DNS != nil},
	} {
		if u.set {
			v.add(join(np, u.field), "Drover does not support %s", u.feature)
		}
	}
	for i, port := range n.ReservedPorts {
		pp := join(np, indexed("ReservedPorts", i))
		validatePort(v, pp, port, labels)
		if port.Value < 1 || port.Value > MaxValidPort {
			v.add(join(pp, "Value"), "static port %q must be between 1 and %d; got %d", port.Label, MaxValidPort, port.Value)
			continue
		}
		key := port.PortHostNetwork() + "/" + strconv.Itoa(port.Value)
		if other, dup := statics[key]; dup {
			v.add(join(pp, "Value"), "static port %d is already reserved by port %s", port.Value, other)
		} else {
			statics[key] = strconv.Quote(port.Label)
		}
	}
	for i, port := range n.DynamicPorts {
		pp := join(np, indexed("DynamicPorts", i))
		validatePort(v, pp, port, labels)
		if port.Value != 0 {
			v.add(join(pp, "Value"), "Drover does not support a value on a dynamic port (Nomad ignores it); write a static port in ReservedPorts (static = %d in HCL)", port.Value)
		}
	}
}

func validatePort(v *validator, pp string, port Port, labels map[string]string) {
	switch {
	case port.Label == "":
		v.add(join(pp, "Label"), "must be set")
	case strings.ContainsAny(port.Label, "=\x00 "):
		v.add(join(pp, "Label"), "invalid port label %q", port.Label)
	default:
		if other, dup := labels[port.Label]; dup {
			v.add(join(pp, "Label"), "port label %q is already used by %s", port.Label, other)
		} else {
			labels[port.Label] = pp
		}
	}
	if port.To < -1 || port.To > MaxValidPort {
		v.add(join(pp, "To"), "must be between -1 and %d; got %d", MaxValidPort, port.To)
	}
	if port.HostNetwork != "" && ValidName(port.HostNetwork) != "" {
		v.add(join(pp, "HostNetwork"), "invalid host network name %q", port.HostNetwork)
	}
}

// ParsePortRanges reads a port list as Nomad writes it, "22,80,8000-8100",
// into the ports it holds, in order and without repeats. Spaces around
// entries are allowed; an empty list is none. Every port must be in
// 1..65535 and a range must not run backwards.
func ParsePortRanges(spec string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parsePort(lo)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = parsePort(hi); err != nil {
				return nil, err
			}
			if last < first {
				return nil, fmt.Errorf("port range %q runs backwards", part)
			}
		}
		for p := first; p <= last; p++ {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a port number", strings.TrimSpace(s))
	}
	if p < 1 || p > MaxValidPort {
		return 0, fmt.Errorf("port %d is not between 1 and %d", p, MaxValidPort)
	}
	return p, nil
}

// DynamicPortRange returns the node's dynamic port range, Nomad's
// defaults where unset.
func (r *NodeResources) DynamicPortRange() (lo, hi int) {
	lo, hi = DefaultMinDynamicPort, DefaultMaxDynamicPort
	if r != nil && r.MinDynamicPort > 0 {
		lo = r.MinDynamicPort
	}
	if r != nil && r.MaxDynamicPort > 0 {
		hi = r.MaxDynamicPort
	}
	return lo, hi
}
