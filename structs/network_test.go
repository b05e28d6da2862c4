package structs

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePortRanges(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		err  string
	}{
		{"", nil, ""},
		{"22", []int{22}, ""},
		{"22, 80,8000-8003,80", []int{22, 80, 8000, 8001, 8002, 8003}, ""},
		{"9-7", nil, `port range "9-7" runs backwards`},
		{"0", nil, "port 0 is not between 1 and 65535"},
		{"65536", nil, "port 65536 is not between 1 and 65535"},
		{"http", nil, `"http" is not a port number`},
	}
	for _, tc := range cases {
		got, err := ParsePortRanges(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v; want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestPortUsage(t *testing.T) {
	n := &Node{
		NodeResources: &NodeResources{NodeNetworks: []*NodeNetworkResource{{Addresses: []NodeNetworkAddress{
			{Alias: "default", Address: "10.0.0.1", ReservedPorts: "9000-9001"},
			{Alias: "public", Address: "203.0.113.1"},
		}}}},
		ReservedResources: &NodeReservedResources{Networks: NodeReservedNetworkResources{ReservedHostPorts: "22"}},
	}
	u := NewPortUsage(n)
	if !u.InUse("10.0.0.1", 22) || !u.InUse("203.0.113.1", 22) || !u.InUse("10.0.0.1", 9001) || u.InUse("203.0.113.1", 9001) {
		t.Fatal("reserved ports: global on every address, an address's own only there")
	}
	a := &Allocation{AllocatedResources: &AllocatedResources{Shared: AllocatedSharedResources{
		Ports: []AllocatedPortMapping{{Label: "http", Value: 8080, HostIP: "10.0.0.1"}}}}}
	if r := u.Collision(a); r != "" {
		t.Fatalf("collision on a free node: %s", r)
	}
	u.Add(a)
	if r := u.Collision(a); r != "reserved port collision http=8080" {
		t.Fatalf("collision = %q", r)
	}
	u.Remove(a)
	if u.InUse("10.0.0.1", 8080) {
		t.Fatal("removed port still in use")
	}
	twice := &Allocation{AllocatedResources: &AllocatedResources{Shared: AllocatedSharedResources{
		Ports: []AllocatedPortMapping{{Label: "a", Value: 80, HostIP: "10.0.0.1"}, {Label: "b", Value: 80, HostIP: "10.0.0.1"}}}}}
	if r := u.Collision(twice); r != "reserved port collision b=80" {
		t.Fatalf("one allocation's two ports: %q", r)
	}
}
