package scheduler

import (
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// portJob is mock.Job with count and the group's network.
func portJob(count int, net *structs.NetworkResource) *structs.Job {
	j := mock.Job()
	j.TaskGroups[0].Count = count
	j.TaskGroups[0].Tasks[0].Resources.CPU = 50
	j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 32
	j.TaskGroups[0].Networks = []*structs.NetworkResource{net}
	return j
}

func TestPortsDynamic(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 1, func(_ int, n *structs.Node) {
		n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 25000, 25009
	})
	job := addJob(t, h, portJob(10, &structs.NetworkResource{DynamicPorts: []structs.Port{{Label: "http"}, {Label: "admin", To: -1}}}))
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 5 {
		t.Fatalf("placed %d; 10 ports in the range hold 5 allocations of 2", len(live))
	}
	seen := map[int]bool{}
	for _, a := range live {
		sh := a.AllocatedResources.Shared
		if len(sh.Ports) != 2 || len(sh.Networks) != 1 || sh.Networks[0].IP != "127.0.0.1" || sh.Networks[0].Device != "eth0" {
			t.Fatalf("shared resources %+v", sh)
		}
		for i, p := range sh.Ports {
			if p.Value < 25000 || p.Value > 25009 || p.HostIP != "127.0.0.1" || seen[p.Value] {
				t.Fatalf("port %+v (seen %v)", p, seen)
			}
			if sh.Networks[0].DynamicPorts[i].Value != p.Value {
				t.Fatalf("networks %+v differ from ports %+v", sh.Networks[0], sh.Ports)
			}
			seen[p.Value] = true
		}
		if sh.Ports[1].To != sh.Ports[1].Value || sh.Ports[0].To != 0 {
			t.Fatalf("to: %+v", sh.Ports)
		}
	}
	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil || m.DimensionExhausted["network: dynamic port selection failed"] == 0 {
		t.Fatalf("failure metric %+v", m)
	}
}

func TestPortsStatic(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 3, func(i int, n *structs.Node) {
		if i == 0 {
			n.ReservedResources.Networks.ReservedHostPorts = "22,8000-8100"
		}
	})
	job := addJob(t, h, portJob(3, &structs.NetworkResource{ReservedPorts: []structs.Port{{Label: "http", Value: 8080}}}))
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 2 {
		t.Fatalf("placed %d; want one on each of the two nodes without 8080 reserved", len(live))
	}
	for _, a := range live {
		if a.NodeID == nodes[0].ID {
			t.Fatalf("placed on the node that reserves 8080")
		}
		if p := a.AllocatedResources.Shared.Ports; len(p) != 1 || p[0].Value != 8080 || p[0].Label != "http" {
			t.Fatalf("ports %+v", p)
		}
	}
	if live[0].NodeID == live[1].NodeID {
		t.Fatal("static port 8080 given twice on one node")
	}
	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil || m.DimensionExhausted["network: reserved port collision http=8080"] != 3 {
		t.Fatalf("failure metric %+v", m)
	}

	// A destructive update frees the old allocations' ports for their
	// replacements.
	job2 := job.Copy()
	job2.TaskGroups[0].Count = 2
	job2.TaskGroups[0].Tasks[0].Env["V"] = "2"
	job2 = addJob(t, h, job2)
	process(t, h, job2, structs.EvalTriggerJobRegister)
	live, _ = jobAllocs(t, h, job2)
	if len(live) != 2 || live[0].JobVersion != job2.Version || live[1].JobVersion != job2.Version {
		t.Fatalf("after update: %d live %+v", len(live), live)
	}
}

func TestPortsHostNetwork(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 2, func(i int, n *structs.Node) {
		if i == 1 {
			n.NodeResources.NodeNetworks[0].Addresses = append(n.NodeResources.NodeNetworks[0].Addresses,
				structs.NodeNetworkAddress{Family: "ipv4", Alias: "public", Address: "203.0.113.7", ReservedPorts: "443"})
		}
	})
	job := addJob(t, h, portJob(2, &structs.NetworkResource{
		ReservedPorts: []structs.Port{{Label: "https", Value: 443, HostNetwork: "public"}}}))
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 0 {
		t.Fatalf("placed %d; port 443 is reserved on the only public address", len(live))
	}
	job2 := job.Copy()
	job2.TaskGroups[0].Networks[0].ReservedPorts[0].Value = 8443
	job2 = addJob(t, h, job2)
	process(t, h, job2, structs.EvalTriggerJobRegister)
	live, _ = jobAllocs(t, h, job2)
	if len(live) != 1 || live[0].NodeID != nodes[1].ID || live[0].AllocatedResources.Shared.Ports[0].HostIP != "203.0.113.7" {
		t.Fatalf("live %+v", live)
	}
	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered[`missing host network "public" for port "https"`] == 0 ||
		m.DimensionExhausted["network: reserved port collision https=8443"] == 0 {
		t.Fatalf("failure metric %+v", m)
	}
}

// A task's legacy network block gets its ports too, recorded on the task.
func TestPortsLegacyTaskNetwork(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 1)
	j := mock.Job()
	j.TaskGroups[0].Count = 2
	j.TaskGroups[0].Tasks[0].Resources.Networks = []*structs.NetworkResource{{
		ReservedPorts: []structs.Port{{Label: "db", Value: 6379}}, DynamicPorts: []structs.Port{{Label: "x"}}}}
	job := addJob(t, h, j)
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 1 {
		t.Fatalf("placed %d; one node holds one static 6379", len(live))
	}
	nets := live[0].AllocatedResources.Tasks["web"].Networks
	if len(nets) != 1 || nets[0].IP != "127.0.0.1" || nets[0].ReservedPorts[0].Value != 6379 || nets[0].DynamicPorts[0].Value == 0 {
		t.Fatalf("task networks %+v", nets)
	}
	if len(live[0].AllocatedResources.Shared.Ports) != 0 {
		t.Fatalf("shared ports %+v", live[0].AllocatedResources.Shared.Ports)
	}
}

// Groups without ports never build a node's port set.
func TestNoPortsNoPortSets(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 5)
	job := addJob(t, h, mock.Job())
	ctx, err := newEvalContext(h.State, h.Logger, mock.Eval(job), job, HarnessEpoch)
	if err != nil {
		t.Fatal(err)
	}
	st := newStack(ctx, false, dropFixed)
	if _, ok := st.Select(job.TaskGroups[0], 0, ""); !ok {
		t.Fatal("no node")
	}
	for _, n := range ctx.infos {
		if n.ports != nil {
			t.Fatal("a port set was built for a group without ports")
		}
	}
}

// A system job with a static port runs on every node where the port is
// free; a node that reserves it is reported as exhausted.
func TestPortsSystemJob(t *testing.T) {
	h := testHarness(t)
	nodes := mockNodes(t, h, 3, func(i int, n *structs.Node) {
		if i == 2 {
			n.ReservedResources.Networks.ReservedHostPorts = "9100"
		}
	})
	j := mock.SystemJob()
	j.TaskGroups[0].Networks = []*structs.NetworkResource{{ReservedPorts: []structs.Port{{Label: "metrics", Value: 9100}}}}
	job := addJob(t, h, j)
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 2 {
		t.Fatalf("placed %d, want 2", len(live))
	}
	for _, a := range live {
		if a.NodeID == nodes[2].ID || a.AllocatedResources.Shared.Ports[0].Value != 9100 {
			t.Fatalf("alloc %s on %s ports %+v", a.Name, a.NodeID, a.AllocatedResources.Shared.Ports)
		}
	}
	if m := lastEval(t, h).FailedTGAllocs["web"]; m == nil || m.DimensionExhausted["network: reserved port collision metrics=9100"] != 1 {
		t.Fatalf("failure metric %+v", m)
	}
}
