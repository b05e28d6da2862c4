package agent

import (
	"net/http"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNodePoolsNomadClient drives the node pool API with Nomad's Go
// client: the built-in pools, register, info, list, the pool's nodes and
// jobs, a job in a pool that does not exist refused, a job in "all" placed
// on the dev node (pool "default"), deleting a pool in use refused, and
// deleting an unused pool.
func TestNodePoolsNomadClient(t *testing.T) {
	a := startDevAgent(t)
	c := nomadClient(t, a.HTTPURL(), "")
	pools := c.NodePools()

	list, _, err := pools.List(nil)
	if err != nil || len(list) != 2 || list[0].Name != "all" || list[1].Name != "default" {
		t.Fatalf("built-in pools: %+v %v", list, err)
	}
	if _, err := pools.Register(&nomad.NodePool{Name: "default", Description: "x"}, nil); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("register default: %v, want 400", err)
	}
	if _, err := pools.Register(&nomad.NodePool{Name: "gpu", Description: "GPU nodes", Meta: map[string]string{"team": "ml"}}, nil); err != nil {
		t.Fatal(err)
	}
	info, _, err := pools.Info("gpu", nil)
	if err != nil || info.Description != "GPU nodes" || info.Meta["team"] != "ml" || info.CreateIndex == 0 {
		t.Fatalf("info: %+v %v", info, err)
	}
	if _, _, err := pools.Info("nope", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("info of a missing pool: %v, want 404", err)
	}
	if _, err := pools.Register(&nomad.NodePool{Name: "ent", SchedulerConfiguration: &nomad.NodePoolSchedulerConfiguration{SchedulerAlgorithm: "spread"}}, nil); statusOf(err) != http.StatusBadRequest ||
		!strings.Contains(err.Error(), "SchedulerConfiguration: Drover does not support") {
		t.Fatalf("register with a scheduler configuration: %v", err)
	}
	if _, err := pools.Register(&nomad.NodePool{Name: "ttl", NodeIdentityTTL: time.Hour}, nil); statusOf(err) != http.StatusBadRequest ||
		!strings.Contains(err.Error(), "NodeIdentityTTL") {
		t.Fatalf("register with a node identity TTL: %v", err)
	}

	// The dev node is in "default" (and so in "all"), not in "gpu".
	var nodes []*nomad.NodeListStub
	deadline := time.Now().Add(20 * time.Second)
	for len(nodes) == 0 && time.Now().Before(deadline) {
		nodes, _, _ = pools.ListNodes("default", nil)
		time.Sleep(50 * time.Millisecond)
	}
	if len(nodes) != 1 || nodes[0].NodePool != "default" {
		t.Fatalf("default pool nodes: %+v", nodes)
	}
	if all, _, err := pools.ListNodes("all", nil); err != nil || len(all) != 1 {
		t.Fatalf("all pool nodes: %+v %v", all, err)
	}
	if gpu, _, err := pools.ListNodes("gpu", nil); err != nil || len(gpu) != 0 {
		t.Fatalf("gpu pool nodes: %+v %v", gpu, err)
	}

	job := nomadJob("pooled")
	job.NodePool = new("missing")
	if _, _, err := c.Jobs().Register(job, nil); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), `node pool "missing" does not exist`) {
		t.Fatalf("register in a missing pool: %v", err)
	}
	job.NodePool = new("gpu")
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	if jobs, _, err := pools.ListJobs("gpu", nil); err != nil || len(jobs) != 1 || jobs[0].ID != "pooled" {
		t.Fatalf("gpu pool jobs: %+v %v", jobs, err)
	}
	if _, err := pools.Delete("gpu", nil); statusOf(err) != http.StatusConflict && statusOf(err) != http.StatusBadRequest {
		t.Fatalf("delete a pool in use: %v", err)
	}
	back, _, err := c.Jobs().Info("pooled", nil)
	if err != nil || *back.NodePool != "gpu" {
		t.Fatalf("job read back: %v %v", back, err)
	}

	// A job in "all" places on the dev node.
	anywhere := nomadJob("anywhere")
	anywhere.NodePool = new("all")
	if _, _, err := c.Jobs().Register(anywhere, nil); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		allocs, _, err := c.Jobs().Allocations("anywhere", false, nil)
		if err == nil && len(allocs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job in pool all was not placed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if _, err := pools.Register(&nomad.NodePool{Name: "spare"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pools.Delete("spare", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pools.Info("spare", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("deleted pool: %v", err)
	}
}
