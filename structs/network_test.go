package structs

import (
	"reflect"
	"slices"
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

// TestPortUsageOnHeld checks a PortUsage built over a node's held ports
// (the state's shared NodePorts) against one built by adding the same
// allocations one by one: same answers, the shared keys untouched, and
// the dynamic range's free count kept through removes and re-adds.
func TestPortUsageOnHeld(t *testing.T) {
	n := &Node{NodeResources: &NodeResources{
		MinDynamicPort: 20000, MaxDynamicPort: 20009,
		NodeNetworks: []*NodeNetworkResource{{Addresses: []NodeNetworkAddress{
			{Alias: "default", Address: "10.0.0.1", ReservedPorts: "20009"},
		}}},
	}}
	alloc := func(id string, ports ...int) *Allocation {
		a := &Allocation{ID: id, AllocatedResources: &AllocatedResources{}}
		for _, p := range ports {
			a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports,
				AllocatedPortMapping{Label: "p", Value: p, HostIP: "10.0.0.1"})
		}
		return a
	}
	allocs := []*Allocation{alloc("a", 20000, 8080), alloc("b", 20001), alloc("c", 20001)} // c: held twice
	var holders []AllocPorts
	for _, a := range allocs {
		holders = append(holders, AllocPorts{AllocID: a.ID, Ports: AllocPortKeys(a)})
	}
	held := NewNodePorts(holders)
	keys := slices.Clone(held.Keys)

	onHeld, added := NewPortUsageOn(n, held), NewPortUsage(n)
	for _, a := range allocs {
		added.Add(a)
	}
	check := func(when string) {
		t.Helper()
		for p := 7999; p <= 20010; p++ {
			if onHeld.InUse("10.0.0.1", p) != added.InUse("10.0.0.1", p) {
				t.Fatalf("%s: port %d in use %v over held, %v added", when, p, onHeld.InUse("10.0.0.1", p), added.InUse("10.0.0.1", p))
			}
		}
		if f, g := onHeld.FreeDynamic("10.0.0.1"), added.FreeDynamic("10.0.0.1"); f != g {
			t.Fatalf("%s: %d free dynamic over held, %d added", when, f, g)
		}
	}
	check("built")
	if f := onHeld.FreeDynamic("10.0.0.1"); f != 7 { // 10 in range, 1 reserved, 20000 and 20001 taken
		t.Fatalf("free dynamic = %d, want 7", f)
	}
	onHeld.RemoveKeys(held.HolderPorts("b"))
	added.Remove(allocs[1])
	check("b removed (c still holds 20001)")
	onHeld.RemoveKeys(held.HolderPorts("c"))
	added.Remove(allocs[2])
	check("c removed")
	onHeld.RemoveKeys(held.HolderPorts("c")) // not held any more: no-op
	added.Remove(allocs[2])
	check("c removed twice")
	d := alloc("d", 20001, 20002)
	onHeld.Add(d)
	added.Add(d)
	check("d added")
	if !slices.Equal(held.Keys, keys) {
		t.Fatalf("shared keys changed: %v, were %v", held.Keys, keys)
	}
	if next := held.WithHolders([]AllocPorts{{AllocID: "b"}, {AllocID: "b", Ports: held.HolderPorts("b")}}); next != held {
		t.Fatal("a change undone in the same write made a new NodePorts")
	}
	if next := held.WithHolders([]AllocPorts{{AllocID: "a"}, {AllocID: "b"}, {AllocID: "c"}}); next != nil {
		t.Fatalf("every holder gone: %+v, want nil", next)
	}
}
