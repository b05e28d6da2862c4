package agent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/structs"
	nomad "github.com/hashicorp/nomad/api"
)

// blockingWakeBudget is how soon after a write a blocking query waiting
// for it must return.
const blockingWakeBudget = 100 * time.Millisecond

// startServerAgent runs a server-only dev agent (no client: the test
// registers the nodes it needs) with fast Raft timeouts, and returns it
// with a Nomad client for its HTTP API once it has a leader.
func startServerAgent(t *testing.T) (*Agent, *nomad.Client) {
	t.Helper()
	cfg := DevConfig()
	cfg.Client.Enabled = false
	cfg.Ports = Ports{HTTP: 0, RPC: 0}
	cfg.NodeName = "compat"
	cfg.serverConfigHook = func(sc *server.Config) { sc.RaftTimeoutScale = 0.1 }
	a, err := NewAgent(cfg, testLogger())
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	nc := nomad.DefaultConfig()
	nc.Address = a.HTTPURL()
	c, err := nomad.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if leader, err := c.Status().Leader(); err == nil && leader != "" {
			return a, c
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// registerNode registers a ready raw_exec node through the server, as a
// client agent would.
func registerNode(t *testing.T, a *Agent, name string) *structs.Node {
	t.Helper()
	id := structs.GenerateUUID()
	n := &structs.Node{
		ID: id, SecretID: structs.GenerateUUID(), Name: name, Datacenter: "dc1", NodePool: "default",
		HTTPAddr:   a.HTTPAddr(),
		Attributes: map[string]string{"kernel.name": "linux", "unique.network.ip-address": "127.0.0.1", "driver.raw_exec": "1"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: structs.NodeMemoryResources{MemoryMB: 4096}, Disk: structs.NodeDiskResources{DiskMB: 10240}},
		Drivers:               map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
	}
	n.ComputeClass()
	var resp structs.NodeUpdateResponse
	req := &structs.NodeRegisterRequest{Node: n, WriteRequest: structs.WriteRequest{Region: "global"}}
	if err := a.Server().RPC("Node.Register", req, &resp); err != nil {
		t.Fatalf("Node.Register: %v", err)
	}
	return n
}

// waitEval blocks (with WaitIndex, as Nomad's CLI does) until the
// evaluation is terminal.
func waitEval(t *testing.T, c *nomad.Client, id string) *nomad.Evaluation {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var index uint64
	for time.Now().Before(deadline) {
		ev, qm, err := c.Evaluations().Info(id, &nomad.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatalf("Evaluations.Info(%s): %v", id, err)
		}
		switch ev.Status {
		case "complete", "failed", "canceled":
			return ev
		}
		index = qm.LastIndex
	}
	t.Fatalf("evaluation %s never finished", id)
	return nil
}

// TestNomadClientCompat drives a real in-process Drover with Nomad's own
// Go client through the user surface: jobs, plans, allocations,
// evaluations, nodes (drain, eligibility), status, operator, GC, paging,
// an unsupported endpoint, and blocking queries' wake-up latency.
func TestNomadClientCompat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	a, c := startServerAgent(t)
	n1 := registerNode(t, a, "node-1")
	n2 := registerNode(t, a, "node-2")

	// Status and operator.
	leader, err := c.Status().Leader()
	if err != nil || leader != a.RPCAddr() {
		t.Fatalf("Status.Leader = %q, %v", leader, err)
	}
	if peers, err := c.Status().Peers(); err != nil || !slices.Equal(peers, []string{leader}) {
		t.Fatalf("Status.Peers = %v, %v", peers, err)
	}
	rc, err := c.Operator().RaftGetConfiguration(nil)
	if err != nil || len(rc.Servers) != 1 || !rc.Servers[0].Leader {
		t.Fatalf("RaftGetConfiguration = %+v, %v", rc, err)
	}

	// Nodes.
	nodes, qm, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 2 || qm.LastIndex == 0 {
		t.Fatalf("Nodes.List = %+v, %+v, %v", nodes, qm, err)
	}
	node, _, err := c.Nodes().Info(n1.ID, nil)
	if err != nil || node.Name != "node-1" || node.Status != "ready" || node.NodeResources.Memory.MemoryMB != 4096 {
		t.Fatalf("Nodes.Info = %+v, %v", node, err)
	}

	// Register and follow the evaluation.
	job := nomadJob("web")
	job.TaskGroups[0].Constraints = nil
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("Jobs.Register: %v", err)
	}
	ev := waitEval(t, c, reg.EvalID)
	if ev.Status != "complete" || len(ev.FailedTGAllocs) != 0 {
		t.Fatalf("eval = %+v (failed %+v)", ev, ev.FailedTGAllocs)
	}
	info, _, err := c.Jobs().Info("web", nil)
	if err != nil || *info.ID != "web" || *info.TaskGroups[0].Count != 2 {
		t.Fatalf("Jobs.Info = %+v, %v", info, err)
	}
	list, _, err := c.Jobs().List(nil)
	if err != nil || len(list) != 1 || list[0].ID != "web" {
		t.Fatalf("Jobs.List = %+v, %v", list, err)
	}

	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("Jobs.Allocations = %+v, %v", allocs, err)
	}
	evAllocs, _, err := c.Evaluations().Allocations(reg.EvalID, nil)
	if err != nil || len(evAllocs) != 2 {
		t.Fatalf("Evaluations.Allocations = %+v, %v", evAllocs, err)
	}
	all, _, err := c.Allocations().List(nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("Allocations.List = %+v, %v", all, err)
	}
	alloc, _, err := c.Allocations().Info(allocs[0].ID, nil)
	if err != nil || alloc.Job == nil || *alloc.Job.ID != "web" || alloc.EvalID != reg.EvalID ||
		(alloc.NodeID != n1.ID && alloc.NodeID != n2.ID) {
		t.Fatalf("Allocations.Info = %+v, %v", alloc, err)
	}
	onNodes := 0
	for _, n := range []*structs.Node{n1, n2} {
		na, _, err := c.Nodes().Allocations(n.ID, nil)
		if err != nil {
			t.Fatalf("Nodes.Allocations: %v", err)
		}
		onNodes += len(na)
	}
	if onNodes != 2 {
		t.Fatalf("allocations on the nodes = %d", onNodes)
	}

	evals, _, err := c.Jobs().Evaluations("web", nil)
	if err != nil || !slices.ContainsFunc(evals, func(e *nomad.Evaluation) bool { return e.ID == reg.EvalID }) {
		t.Fatalf("Jobs.Evaluations = %+v, %v", evals, err)
	}
	allEvals, _, err := c.Evaluations().List(nil)
	if err != nil || len(allEvals) == 0 {
		t.Fatalf("Evaluations.List = %+v, %v", allEvals, err)
	}
	summary, _, err := c.Jobs().Summary("web", nil)
	if err != nil || summary.JobID != "web" {
		t.Fatalf("Jobs.Summary = %+v, %v", summary, err)
	}
	if s, ok := summary.Summary["g"]; !ok || s.Queued+s.Starting+s.Running != 2 {
		t.Fatalf("summary of g = %+v", summary.Summary)
	}

	// Plan a scale-up: one placement, two kept (ignored or updated in
	// place), nothing written.
	bigger := nomadJob("web")
	bigger.TaskGroups[0].Constraints = nil
	bigger.TaskGroups[0].Count = new(3)
	plan, _, err := c.Jobs().Plan(bigger, true, nil)
	if err != nil {
		t.Fatalf("Jobs.Plan: %v", err)
	}
	if u := plan.Annotations.DesiredTGUpdates["g"]; u == nil || u.Place != 1 || u.Ignore+u.InPlaceUpdate != 2 {
		t.Fatalf("plan annotations for g = %+v", u)
	}
	if plan.JobModifyIndex != reg.JobModifyIndex || plan.Diff == nil || plan.Diff.Type != "Edited" {
		t.Fatalf("plan = %+v diff %+v", plan, plan.Diff)
	}
	if again, _, _ := c.Jobs().Info("web", nil); *again.TaskGroups[0].Count != 2 {
		t.Fatal("plan changed the job")
	}

	// Paging.
	if _, _, err := c.Jobs().Register(nomadJob("worker"), nil); err != nil {
		t.Fatal(err)
	}
	page, pm, err := c.Jobs().List(&nomad.QueryOptions{PerPage: 1})
	if err != nil || len(page) != 1 || page[0].ID != "web" || pm.NextToken == "" {
		t.Fatalf("page 1 = %+v, %+v, %v", page, pm, err)
	}
	page, pm, err = c.Jobs().List(&nomad.QueryOptions{PerPage: 1, NextToken: pm.NextToken})
	if err != nil || len(page) != 1 || page[0].ID != "worker" || pm.NextToken != "" {
		t.Fatalf("page 2 = %+v, %+v, %v", page, pm, err)
	}

	// Eligibility and drain.
	if _, err := c.Nodes().ToggleEligibility(n2.ID, false, nil); err != nil {
		t.Fatalf("ToggleEligibility: %v", err)
	}
	if node, _, _ := c.Nodes().Info(n2.ID, nil); node.SchedulingEligibility != "ineligible" {
		t.Fatalf("eligibility = %q", node.SchedulingEligibility)
	}
	if _, err := c.Nodes().ToggleEligibility(n2.ID, true, nil); err != nil {
		t.Fatal(err)
	}
	dr, err := c.Nodes().UpdateDrain(n1.ID, &nomad.DrainSpec{Deadline: time.Minute}, false, nil)
	if err != nil || dr.NodeModifyIndex == 0 {
		t.Fatalf("UpdateDrain = %+v, %v", dr, err)
	}
	if node, _, _ := c.Nodes().Info(n1.ID, nil); node.DrainStrategy == nil || node.SchedulingEligibility != "ineligible" {
		t.Fatalf("drained node = %+v", node)
	}
	if _, err := c.Nodes().UpdateDrain(n1.ID, nil, true, nil); err != nil {
		t.Fatalf("UpdateDrain off: %v", err)
	}
	if node, _, _ := c.Nodes().Info(n1.ID, nil); node.DrainStrategy != nil || node.SchedulingEligibility != "eligible" {
		t.Fatalf("undrained node = %+v", node)
	}

	// Blocking queries wake as soon as the write they wait for commits.
	t.Run("blocking query latency", func(t *testing.T) {
		_, qm, err := c.Jobs().Info("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			at    time.Time
			index uint64
			err   error
		}
		done := make(chan result, 1)
		go func() {
			_, qm2, err := c.Jobs().Info("web", &nomad.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 10 * time.Second})
			r := result{at: time.Now(), err: err}
			if qm2 != nil {
				r.index = qm2.LastIndex
			}
			done <- r
		}()
		select {
		case r := <-done:
			t.Fatalf("query returned before the write: %+v", r)
		case <-time.After(200 * time.Millisecond):
		}
		changed := nomadJob("web")
		changed.TaskGroups[0].Constraints = nil
		changed.Meta["rev"] = "2"
		start := time.Now()
		if _, _, err := c.Jobs().Register(changed, nil); err != nil {
			t.Fatal(err)
		}
		written := time.Now()
		r := <-done
		if r.err != nil || r.index <= qm.LastIndex {
			t.Fatalf("blocking query: %+v", r)
		}
		if r.at.Before(start) {
			t.Fatal("woke before the write started")
		}
		late := r.at.Sub(written)
		if late > blockingWakeBudget {
			t.Fatalf("blocking query woke %s after the write returned; budget %s", late, blockingWakeBudget)
		}
		t.Logf("blocking query woke %s after the write returned (write took %s)", late, written.Sub(start))
	})

	// Stop an allocation: an evaluation replaces it.
	stop, err := c.Allocations().Stop(&nomad.Allocation{ID: allocs[0].ID}, nil)
	if err != nil || stop.EvalID == "" {
		t.Fatalf("Allocations.Stop = %+v, %v", stop, err)
	}
	waitEval(t, c, stop.EvalID)

	// A job without an update block has no deployment.
	if deps, _, err := c.Deployments().List(nil); err != nil || len(deps) != 0 {
		t.Fatalf("Deployments.List = %v, %v", deps, err)
	}
	// Unblocking is for multiregion deployments, which Drover refuses: a 400.
	_, _, err = c.Deployments().Unblock("d1", nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Drover does not support multiregion deployments (unblock)") {
		t.Fatalf("Deployments.Unblock err = %v", err)
	}

	// Metrics decode into Nomad's summary.
	if _, _, err := c.Operator().MetricsSummary(nil); err != nil {
		t.Fatalf("MetricsSummary: %v", err)
	}
	raw, err := c.Operator().Metrics(&nomad.QueryOptions{Params: map[string]string{"format": "prometheus"}})
	if err != nil || json.Valid(raw) {
		t.Fatalf("prometheus metrics: %v %q", err, raw)
	}

	// A forced garbage collection (jobs, evaluations, allocations,
	// nodes, deployments) answers as Nomad's does.
	if err := c.System().GarbageCollect(); err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	evalID, _, err := c.Jobs().Deregister("web", true, nil)
	if err != nil || evalID == "" {
		t.Fatalf("Deregister = %q, %v", evalID, err)
	}
	if _, _, err := c.Jobs().Info("web", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Info after purge: %v", err)
	}
}

// A job that cannot be placed finishes its evaluation with the reasons in
// FailedTGAllocs, keyed the way `drover job run` prints them.
func TestNomadClientPlacementFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	a, c := startServerAgent(t)
	registerNode(t, a, "node-1")
	job := nomadJob("win")
	job.TaskGroups[0].Constraints = []*nomad.Constraint{nomad.NewConstraint("${attr.kernel.name}", "=", "windows")}
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := waitEval(t, c, reg.EvalID)
	m := ev.FailedTGAllocs["g"]
	if m == nil || m.ConstraintFiltered["${attr.kernel.name} = windows"] != 1 || ev.BlockedEval == "" {
		t.Fatalf("eval = %+v failed %+v", ev, ev.FailedTGAllocs)
	}
	plan, _, err := c.Jobs().Plan(job, false, nil)
	if err != nil || plan.FailedTGAllocs["g"] == nil {
		t.Fatalf("plan = %+v, %v", plan, err)
	}
}
