package fingerprint

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/structs"
)

// HostNetwork is a client's host_network "name" { ... } block: the
// addresses in CIDR, or on Interface, or both, make up the named network
// a job's port may ask for (host_network = "name"); ReservedPorts are held
// back on them.
type HostNetwork struct {
	Name          string
	CIDR          string
	Interface     string
	ReservedPorts string
}

// NetworkConfig is the client's network settings.
type NetworkConfig struct {
	// Interface is network_interface: the interface whose address is the
	// "default" host network. Empty means the one holding the default
	// route, else loopback.
	Interface string
	// HostNetworks are the host_network blocks.
	HostNetworks []HostNetwork
	// MinDynamicPort and MaxDynamicPort (0: Nomad's defaults).
	MinDynamicPort, MaxDynamicPort int
}

// iface is what the network fingerprint needs of one interface; tests
// give their own.
type iface struct {
	name  string
	mac   string
	addrs []*net.IPNet
}

// systemInterfaces lists the machine's interfaces that are up.
func systemInterfaces() []iface {
	list, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []iface
	for _, in := range list {
		if in.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := in.Addrs()
		if err != nil {
			continue
		}
		i := iface{name: in.Name, mac: in.HardwareAddr.String()}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				i.addrs = append(i.addrs, ipn)
			}
		}
		out = append(out, i)
	}
	return out
}

// defaultRouteInterface reads the interface of the IPv4 default route
// from procRoot/net/route ("" when there is none).
func defaultRouteInterface(procRoot string) string {
	b, err := os.ReadFile(filepath.Join(procRoot, "net", "route"))
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// Iface Destination Gateway Flags ... Mask
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
			return f[0]
		}
	}
	return ""
}

// networks builds the node's network interfaces: the default host network
// on the configured (or default-route, or loopback) interface, at addr
// when it is on that interface, and every host_network's addresses.
func networks(cfg NetworkConfig, addr string, ifaces []iface, routeIface string) []*structs.NodeNetworkResource {
	byName := map[string]*structs.NodeNetworkResource{}
	var order []*structs.NodeNetworkResource
	add := func(in iface, a structs.NodeNetworkAddress) {
		n := byName[in.name]
		if n == nil {
			n = &structs.NodeNetworkResource{Mode: structs.NetworkModeHost, Device: in.name, MacAddress: in.mac}
			byName[in.name] = n
			order = append(order, n)
		}
		n.Addresses = append(n.Addresses, a)
	}

	// The default host network: the address the node is known by when it
	// is on an interface (a configured bind address), else the chosen
	// interface's first address.
	var def *iface
	var defIP net.IP
	if cfg.Interface == "" && addr != "" {
		if ip := net.ParseIP(addr); ip != nil {
			for i := range ifaces {
				for _, a := range ifaces[i].addrs {
					if a.IP.Equal(ip) {
						def, defIP = &ifaces[i], ip
					}
				}
			}
		}
	}
	if def == nil {
		want := cfg.Interface
		if want == "" {
			want = routeIface
		}
		for i := range ifaces {
			if ifaces[i].name == want || want == "" && isLoopback(ifaces[i]) {
				def = &ifaces[i]
				break
			}
		}
		if def == nil && cfg.Interface == "" { // no default route: loopback
			for i := range ifaces {
				if isLoopback(ifaces[i]) {
					def = &ifaces[i]
					break
				}
			}
		}
		if def != nil {
			defIP = firstIP(*def)
		}
	}
	if def != nil && defIP != nil {
		add(*def, structs.NodeNetworkAddress{Family: family(defIP), Alias: structs.DefaultHostNetwork, Address: defIP.String()})
	}

	for _, hn := range cfg.HostNetworks {
		_, cidr, _ := net.ParseCIDR(hn.CIDR) // checked by the agent's config
		for _, in := range ifaces {
			if hn.Interface != "" && in.name != hn.Interface {
				continue
			}
			for _, a := range in.addrs {
				if cidr != nil && !cidr.Contains(a.IP) || a.IP.IsLinkLocalUnicast() {
					continue
				}
				add(in, structs.NodeNetworkAddress{Family: family(a.IP), Alias: hn.Name,
					Address: a.IP.String(), ReservedPorts: hn.ReservedPorts})
			}
		}
	}
	return order
}

func isLoopback(in iface) bool {
	for _, a := range in.addrs {
		if a.IP.IsLoopback() {
			return true
		}
	}
	return false
}

// firstIP is the interface's first IPv4 address, else its first global
// IPv6 one, else nil.
func firstIP(in iface) net.IP {
	for _, a := range in.addrs {
		if a.IP.To4() != nil {
			return a.IP
		}
	}
	for _, a := range in.addrs {
		if !a.IP.IsLinkLocalUnicast() {
			return a.IP
		}
	}
	return nil
}

func family(ip net.IP) string {
	if ip.To4() != nil {
		return "ipv4"
	}
	return "ipv6"
}
