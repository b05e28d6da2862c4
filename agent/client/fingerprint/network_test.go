package fingerprint

import (
	"net"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/drover-project/drover/structs"
)

func ipnet(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

func TestNetworkFingerprint(t *testing.T) {
	ifaces := []iface{
		{name: "lo", addrs: []*net.IPNet{ipnet("127.0.0.1/8"), ipnet("::1/128")}},
		{name: "eth0", mac: "02:00:00:00:00:01", addrs: []*net.IPNet{ipnet("10.0.0.5/24"), ipnet("fe80::1/64")}},
		{name: "eth1", mac: "02:00:00:00:00:02", addrs: []*net.IPNet{ipnet("192.168.7.9/24")}},
	}
	addr := func(alias, ip, reserved string) structs.NodeNetworkAddress {
		fam := "ipv4"
		if net.ParseIP(ip).To4() == nil {
			fam = "ipv6"
		}
		return structs.NodeNetworkAddress{Family: fam, Alias: alias, Address: ip, ReservedPorts: reserved}
	}
	eth0 := func(a ...structs.NodeNetworkAddress) *structs.NodeNetworkResource {
		return &structs.NodeNetworkResource{Mode: "host", Device: "eth0", MacAddress: "02:00:00:00:00:01", Addresses: a}
	}
	cases := []struct {
		name  string
		cfg   NetworkConfig
		addr  string
		route string
		want  []*structs.NodeNetworkResource
	}{
		{"default route", NetworkConfig{}, "", "eth0", []*structs.NodeNetworkResource{eth0(addr("default", "10.0.0.5", ""))}},
		{"no default route: loopback", NetworkConfig{}, "", "",
			[]*structs.NodeNetworkResource{{Mode: "host", Device: "lo", Addresses: []structs.NodeNetworkAddress{addr("default", "127.0.0.1", "")}}}},
		{"bind address picks its interface", NetworkConfig{}, "192.168.7.9", "eth0",
			[]*structs.NodeNetworkResource{{Mode: "host", Device: "eth1", MacAddress: "02:00:00:00:00:02",
				Addresses: []structs.NodeNetworkAddress{addr("default", "192.168.7.9", "")}}}},
		{"network_interface wins", NetworkConfig{Interface: "eth1"}, "10.0.0.5", "eth0",
			[]*structs.NodeNetworkResource{{Mode: "host", Device: "eth1", MacAddress: "02:00:00:00:00:02",
				Addresses: []structs.NodeNetworkAddress{addr("default", "192.168.7.9", "")}}}},
		{"host networks by cidr and interface", NetworkConfig{HostNetworks: []HostNetwork{
			{Name: "private", CIDR: "10.0.0.0/8", ReservedPorts: "22"},
			{Name: "lan", Interface: "eth1"},
		}}, "", "eth0", []*structs.NodeNetworkResource{
			eth0(addr("default", "10.0.0.5", ""), addr("private", "10.0.0.5", "22")),
			{Mode: "host", Device: "eth1", MacAddress: "02:00:00:00:00:02", Addresses: []structs.NodeNetworkAddress{addr("lan", "192.168.7.9", "")}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := networks(tc.cfg, tc.addr, ifaces, tc.route)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("networks =\n%s\nwant\n%s", show(got), show(tc.want))
			}
		})
	}
}

func show(ns []*structs.NodeNetworkResource) string {
	s := ""
	for _, n := range ns {
		s += n.Device + ": "
		for _, a := range n.Addresses {
			s += a.Alias + "=" + a.Address + "(" + a.ReservedPorts + ") "
		}
		s += "\n"
	}
	return s
}

func TestDefaultRouteInterface(t *testing.T) {
	proc := t.TempDir()
	writeFile(t, filepath.Join(proc, "net", "route"),
		"Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
			"eth1\t0007A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"+
			"eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n")
	if got := defaultRouteInterface(proc); got != "eth0" {
		t.Fatalf("default route interface = %q", got)
	}
	if got := defaultRouteInterface(t.TempDir()); got != "" {
		t.Fatalf("without a route table: %q", got)
	}
}

// The whole fingerprint reports the dynamic port range and a network on
// this machine (loopback at least).
func TestFingerprintHasNetwork(t *testing.T) {
	r := Fingerprint(Config{NetworkAddr: "127.0.0.1", Network: NetworkConfig{MinDynamicPort: 21000, MaxDynamicPort: 22000}})
	if len(r.Resources.NodeNetworks) == 0 || r.Resources.NodeNetworks[0].Addresses[0].Address != "127.0.0.1" {
		t.Fatalf("networks = %s", show(r.Resources.NodeNetworks))
	}
	if r.Resources.MinDynamicPort != 21000 || r.Resources.MaxDynamicPort != 22000 {
		t.Fatalf("range = %d-%d", r.Resources.MinDynamicPort, r.Resources.MaxDynamicPort)
	}
}
