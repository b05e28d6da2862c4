package scheduler

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

// propConstraint is a constraint with an independent statement of what it
// means, so the property test does not check the scheduler against itself.
type propConstraint struct {
	c     *structs.Constraint
	holds func(n *structs.Node) bool
}

var propConstraints = []propConstraint{
	{&structs.Constraint{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"},
		func(n *structs.Node) bool { return n.Attributes["kernel.name"] == "linux" }},
	{&structs.Constraint{LTarget: "${attr.os.version}", Operand: structs.ConstraintVersion, RTarget: ">= 22.04"},
		func(n *structs.Node) bool { v := n.Attributes["os.version"]; return v == "22.04" || v == "24.04" }},
	{&structs.Constraint{LTarget: "${meta.rack}", Operand: structs.ConstraintRegex, RTarget: "^r[12]$"},
		func(n *structs.Node) bool { r := n.Meta["rack"]; return r == "r1" || r == "r2" }},
	{&structs.Constraint{LTarget: "${attr.cpu.numcores}", Operand: ">=", RTarget: "8"},
		func(n *structs.Node) bool { c := n.Attributes["cpu.numcores"]; return c == "8" || c == "16" }},
	{&structs.Constraint{LTarget: "${node.datacenter}", Operand: "!=", RTarget: "dc2"},
		func(n *structs.Node) bool { return n.Datacenter != "dc2" }},
}

// genNode draws a node with random capacity and attributes.
func genNode(t *rapid.T, i int) *structs.Node {
	n := mock.Node()
	n.ID = fmt.Sprintf("node-%03d-%s", i, n.ID[:8])
	n.Datacenter = rapid.SampledFrom([]string{"dc1", "dc2", "dc3"}).Draw(t, "dc")
	n.NodeResources.Cpu.CpuShares = int64(rapid.IntRange(500, 8000).Draw(t, "cpu"))
	n.NodeResources.Memory.MemoryMB = int64(rapid.IntRange(512, 16384).Draw(t, "mem"))
	n.ReservedResources.Cpu.CpuShares = int64(rapid.IntRange(0, 400).Draw(t, "rcpu"))
	n.Attributes["kernel.name"] = rapid.SampledFrom([]string{"linux", "linux", "windows"}).Draw(t, "kernel")
	n.Attributes["os.version"] = rapid.SampledFrom([]string{"20.04", "22.04", "24.04"}).Draw(t, "os")
	n.Attributes["cpu.numcores"] = rapid.SampledFrom([]string{"2", "4", "8", "16"}).Draw(t, "cores")
	n.Meta["rack"] = rapid.SampledFrom([]string{"r0", "r1", "r2", "r3"}).Draw(t, "rack")
	if rapid.IntRange(0, 9).Draw(t, "sick") == 0 {
		n.Drivers["mock"].Healthy = false
	}
	if rapid.IntRange(0, 9).Draw(t, "ineligible") == 0 {
		n.SchedulingEligibility = structs.NodeSchedulingIneligible
	}
	return n
}

// genJob draws a service or batch job of one or two groups.
func genJob(t *rapid.T) (*structs.Job, map[structs.Constraint]propConstraint) {
	j := mock.Job()
	if rapid.Bool().Draw(t, "batch") {
		j = mock.BatchJob()
	}
	j.Datacenters = rapid.SampledFrom([][]string{{"dc1"}, {"dc1", "dc2"}, {"*"}, {"dc*"}}).Draw(t, "dcs")
	meaning := map[structs.Constraint]propConstraint{}
	pick := func(label string) []*structs.Constraint {
		var out []*structs.Constraint
		for i, pc := range propConstraints {
			if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("%s%d", label, i)) == 0 {
				c := *pc.c
				meaning[c] = pc
				out = append(out, &c)
			}
		}
		return out
	}
	j.Constraints = pick("job")
	groups := rapid.IntRange(1, 2).Draw(t, "groups")
	base := j.TaskGroups[0]
	j.TaskGroups = nil
	for g := 0; g < groups; g++ {
		tg := base.Copy()
		tg.Name = fmt.Sprintf("g%d", g)
		tg.Count = rapid.IntRange(0, 25).Draw(t, "count")
		tg.Tasks[0].Resources = &structs.Resources{
			CPU:      rapid.IntRange(50, 2500).Draw(t, "tcpu"),
			MemoryMB: rapid.IntRange(32, 4096).Draw(t, "tmem"),
		}
		tg.Constraints = pick("group")
		switch rapid.IntRange(0, 4).Draw(t, "distinct") {
		case 0:
			tg.Constraints = append(tg.Constraints, &structs.Constraint{Operand: structs.ConstraintDistinctHosts})
		case 1:
			tg.Constraints = append(tg.Constraints, &structs.Constraint{LTarget: "${meta.rack}", Operand: structs.ConstraintDistinctProperty,
				RTarget: rapid.SampledFrom([]string{"", "2"}).Draw(t, "plimit")})
		}
		// Preferences move scores only: the invariants must hold whatever
		// they ask for.
		if rapid.IntRange(0, 2).Draw(t, "affinity") == 0 {
			tg.Affinities = []*structs.Affinity{{LTarget: "${meta.rack}", Operand: "=",
				RTarget: rapid.SampledFrom([]string{"r0", "r1"}).Draw(t, "arack"),
				Weight:  int8(rapid.SampledFrom([]int{-100, -20, 30, 100}).Draw(t, "aweight"))}}
		}
		switch rapid.IntRange(0, 3).Draw(t, "spread") {
		case 0:
			tg.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
		case 1:
			tg.Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 80,
				SpreadTarget: []*structs.SpreadTarget{{Value: "r1", Percent: 60}, {Value: "r2", Percent: 20}}}}
		}
		j.TaskGroups = append(j.TaskGroups, tg)
	}
	if rapid.IntRange(0, 3).Draw(t, "jobspread") == 0 {
		j.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 20}}
	}
	return j, meaning
}

// checkInvariants verifies, over the whole store: no node overcommitted;
// every live alloc of job on a ready-at-placement node matching its
// constraints, drivers and datacenters; no group above its count; and
// distinct_hosts / distinct_property respected.
func checkInvariants(t *rapid.T, h *Harness, job *structs.Job, meaning map[structs.Constraint]propConstraint, placedNow map[string]bool) {
	nodes, err := h.State.Nodes(nil)
	if err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	byID := map[string]*structs.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
		allocs, err := h.State.AllocsByNode(nil, n.ID)
		if err != nil {
			t.Fatalf("AllocsByNode: %v", err)
		}
		var used structs.ComparableResources
		for _, a := range allocs {
			if !a.TerminalStatus() {
				used.Add(a.AllocatedResources.Comparable())
			}
		}
		if ok, dim := nodeCapacity(n).Superset(used); !ok {
			t.Fatalf("node %s overcommitted on %s: used %+v of %+v", n.ID, dim, used, nodeCapacity(n))
		}
	}
	live, err := h.State.AllocsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatalf("AllocsByJob: %v", err)
	}
	perGroup := map[string]int{}
	perHost := map[string]int{}
	perRack := map[string]int{}
	for _, a := range live {
		if a.TerminalStatus() {
			continue
		}
		perGroup[a.TaskGroup]++
		n := byID[a.NodeID]
		tg := job.LookupTaskGroup(a.TaskGroup)
		if n == nil || tg == nil {
			t.Fatalf("live alloc %s on missing node or group", a.Name)
		}
		perHost[a.TaskGroup+"/"+n.ID]++
		perRack[a.TaskGroup+"/"+n.Meta["rack"]]++
		if !placedNow[a.ID] {
			continue
		}
		if !n.Ready() || !n.Drivers["mock"].Healthy || !inDatacenters(n.Datacenter, job.Datacenters) {
			t.Fatalf("%s placed on unusable node %s (%s, healthy %v, dc %s)", a.Name, n.ID, n.SchedulingEligibility, n.Drivers["mock"].Healthy, n.Datacenter)
		}
		for _, c := range allConstraints(job, tg) {
			if pc, ok := meaning[*c]; ok && !pc.holds(n) {
				t.Fatalf("%s placed on %s violating %s", a.Name, n.ID, c)
			}
		}
	}
	for _, tg := range job.TaskGroups {
		if perGroup[tg.Name] > tg.Count {
			t.Fatalf("group %s has %d live allocs, count %d", tg.Name, perGroup[tg.Name], tg.Count)
		}
		for _, c := range tg.Constraints {
			limit := 1
			if c.RTarget == "2" {
				limit = 2
			}
			for key, n := range map[string]map[string]int{structs.ConstraintDistinctHosts: perHost, structs.ConstraintDistinctProperty: perRack}[c.Operand] {
				if len(key) > len(tg.Name) && key[:len(tg.Name)+1] == tg.Name+"/" && n > limit {
					t.Fatalf("%s: %d allocs share %s", c.Operand, n, key)
				}
			}
		}
	}
}

func TestPropertySchedulerInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := testHarness(t)
		nn := rapid.IntRange(1, 25).Draw(t, "nodes")
		for i := 0; i < nn; i++ {
			addNodes(t, h, genNode(t, i))
		}
		// Another job already uses some capacity.
		other := addJob(t, h, mock.Job())
		nodes, _ := h.State.Nodes(nil)
		for i, n := range nodes {
			if rapid.IntRange(0, 2).Draw(t, "busy") == 0 {
				a := mock.Alloc(other, n, i)
				a.AllocatedResources.Tasks["web"].Cpu.CpuShares = min(400, nodeCapacity(n).CPU)
				addAllocs(t, h, a)
			}
		}
		j, meaning := genJob(t)
		job := addJob(t, h, j)
		placed := map[string]bool{}
		run := func() {
			before := len(h.Plans)
			e := mock.Eval(job)
			if err := h.Process(e); err != nil {
				t.Fatalf("Process: %v", err)
			}
			for _, p := range h.Plans[before:] {
				for _, a := range PlanAllocs(p) {
					placed[a.ID] = true
				}
			}
			if final := h.LastEval(); final == nil || final.ID != e.ID || final.Status != structs.EvalStatusComplete {
				t.Fatalf("eval did not complete: %+v", final)
			}
			checkInvariants(t, h, job, meaning, placed)
		}
		run()
		// Fail some allocations, take a node down, and run again: lost
		// allocations must leave it, replacements obey the same rules.
		live, _ := h.State.AllocsByJob(nil, job.Namespace, job.ID)
		var failed []*structs.Allocation
		for _, a := range live {
			if !a.TerminalStatus() && rapid.IntRange(0, 4).Draw(t, "fail") == 0 {
				c := a.Copy()
				c.ClientStatus = structs.AllocClientStatusFailed
				c.ModifyTime = HarnessEpoch.Add(-time.Hour).UnixNano()
				failed = append(failed, c)
			}
		}
		if err := h.State.UpdateAllocsFromClient(h.NextIndex(), failed, nil); err != nil {
			t.Fatalf("UpdateAllocsFromClient: %v", err)
		}
		down := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "down")].ID
		if err := h.State.UpdateNodeStatus(h.NextIndex(), down, structs.NodeStatusDown, 0, nil, nil); err != nil {
			t.Fatalf("UpdateNodeStatus: %v", err)
		}
		run()
		after, _ := h.State.AllocsByJob(nil, job.Namespace, job.ID)
		for _, a := range after {
			if a.NodeID == down && !a.TerminalStatus() {
				t.Fatalf("%s still live on down node", a.Name)
			}
		}
		// Change counts (and maybe resources) and run again.
		job = updateJobT(t, h, job, func(j *structs.Job) {
			for _, tg := range j.TaskGroups {
				tg.Count = rapid.IntRange(0, 25).Draw(t, "count2")
				if rapid.Bool().Draw(t, "resize") {
					tg.Tasks[0].Resources.MemoryMB += 64
				}
			}
		})
		run()
	})
}

// updateJobT is updateJob for any tb.
func updateJobT(t tb, h *Harness, job *structs.Job, edit func(j *structs.Job)) *structs.Job {
	j := job.Copy()
	edit(j)
	return addJob(t, h, j)
}
