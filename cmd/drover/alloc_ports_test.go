package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

func TestPrintAllocAddresses(t *testing.T) {
	a := &structs.Allocation{AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Networks: []*structs.NetworkResource{{ReservedPorts: []structs.Port{{Label: "admin", Value: 8081}}}},
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 25001, HostIP: "10.0.0.5"},
			{Label: "admin", Value: 8081, HostIP: "10.0.0.5"}, {Label: "db", Value: 25002, To: 5432, HostIP: "10.0.0.5"}},
	}}}
	var out bytes.Buffer
	printAllocAddresses(&out, a)
	want := `
Allocation Addresses:
Label   Dynamic  Address
*http   yes      10.0.0.5:25001
*admin  no       10.0.0.5:8081
*db     yes      10.0.0.5:25002 -> 5432
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	printAllocAddresses(&out, &structs.Allocation{AllocatedResources: &structs.AllocatedResources{}})
	if strings.TrimSpace(out.String()) != "" {
		t.Fatalf("printed %q for an allocation without ports", out.String())
	}
}
