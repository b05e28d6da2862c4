package agent

import (
	"testing"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadSysBatchJob registers a sysbatch job through Nomad's Go client,
// as Nomad's CLI sends it: it is placed once on each of the two nodes, and
// the job reads back, and lists, with its type, as `nomad job status`
// shows it.
func TestNomadSysBatchJob(t *testing.T) {
	a, c := startServerAgent(t)
	registerNode(t, a, "n1")
	registerNode(t, a, "n2")
	job := &nomad.Job{
		ID:   new("sb"),
		Type: new("sysbatch"),
		TaskGroups: []*nomad.TaskGroup{{
			Name:  new("g"),
			Tasks: []*nomad.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}}},
		}},
	}
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if ev := waitEval(t, c, resp.EvalID); ev.Status != "complete" {
		t.Fatalf("eval = %+v", ev)
	}
	allocs, _, err := c.Jobs().Allocations("sb", false, nil)
	if err != nil || len(allocs) != 2 || allocs[0].NodeID == allocs[1].NodeID {
		t.Fatalf("allocations = %d, %v; want one on each node", len(allocs), err)
	}
	got, _, err := c.Jobs().Info("sb", nil)
	if err != nil || got.Type == nil || *got.Type != "sysbatch" {
		t.Fatalf("Info: %v, %v", got, err)
	}
	if rp := got.TaskGroups[0].RestartPolicy; rp == nil || *rp.Attempts != 3 {
		t.Fatalf("restart policy %+v; want the batch default", rp)
	}
	list, _, err := c.Jobs().List(nil)
	if err != nil || len(list) != 1 || list[0].Type != "sysbatch" {
		t.Fatalf("List: %+v, %v", list, err)
	}
	sum, _, err := c.Jobs().Summary("sb", nil)
	if err != nil || sum.Summary["g"].Starting+sum.Summary["g"].Running+sum.Summary["g"].Queued == 0 {
		t.Fatalf("Summary: %+v, %v", sum, err)
	}
}
