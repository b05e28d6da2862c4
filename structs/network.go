package structs

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
