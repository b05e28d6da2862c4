package agent

import (
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadClientSeesTaskStartFailure: a task whose command cannot be
// started fails its allocation, and Nomad's own client reads the reason
// from Drover's task events as `nomad alloc status` shows them: the
// Driver Failure with its DriverError, the Not Restarting that fails the
// task, and Details under the keys Nomad's client writes.
func TestNomadClientSeesTaskStartFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	a := startDevClientAgent(t)
	srv, c := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: c.NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady
	})
	job := rawExecJob("nostart", structs.JobTypeBatch, "")
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/nonexistent/drover-test-command"}
	var reg structs.JobRegisterResponse
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatalf("register: %v", err)
	}

	nc, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	var alloc *nomad.Allocation
	pollUntil(t, "the allocation to fail", 20*time.Second, func() bool {
		stubs, _, err := nc.Jobs().Allocations("nostart", false, nil)
		if err != nil || len(stubs) == 0 || stubs[0].ClientStatus != structs.AllocClientStatusFailed {
			return false
		}
		alloc, _, err = nc.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	})
	ts := alloc.TaskStates["t"]
	if ts == nil || ts.State != structs.TaskStateDead || !ts.Failed {
		t.Fatalf("task state %+v", ts)
	}
	var driverFailure, notRestarting *nomad.TaskEvent
	for _, ev := range ts.Events {
		switch ev.Type {
		case structs.TaskDriverFailure:
			driverFailure = ev
		case structs.TaskNotRestarting:
			notRestarting = ev
		}
	}
	if driverFailure == nil || notRestarting == nil {
		t.Fatalf("events %+v", ts.Events)
	}
	const want = "fork/exec /nonexistent/drover-test-command: no such file or directory"
	if driverFailure.DriverError != want || driverFailure.Details["driver_error"] != want ||
		driverFailure.DisplayMessage == "" || driverFailure.Time == 0 {
		t.Fatalf("driver failure event %+v", driverFailure)
	}
	if !notRestarting.FailsTask || notRestarting.Details["fails_task"] != "true" ||
		notRestarting.RestartReason == "" || notRestarting.Details["restart_reason"] != notRestarting.RestartReason {
		t.Fatalf("not restarting event %+v", notRestarting)
	}
}
