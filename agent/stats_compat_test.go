package agent

import (
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client/driver/exec"
	"github.com/drover-project/drover/structs"
)

// TestNomadClientReadsResourceUsage: Nomad's Go client reads a running
// task's real usage (/v1/client/allocation/<id>/stats) for raw_exec and,
// where it can run, exec, and the node's (/v1/client/stats), as `nomad
// alloc status` and `nomad node status -stats` do.
func TestNomadClientReadsResourceUsage(t *testing.T) {
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
	nc, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	drivers := []string{"raw_exec"}
	if fp := exec.New(exec.Config{}).Fingerprint(); fp.Healthy {
		drivers = append(drivers, "exec")
	} else {
		t.Logf("exec not checked: %s", fp.HealthDescription)
	}
	for _, drv := range drivers {
		t.Run(drv, func(t *testing.T) {
			job := rawExecJob("stats-"+drv, structs.JobTypeService, `x=$(head -c 3000000 /dev/zero | tr '\0' a); sleep 300`)
			job.TaskGroups[0].Tasks[0].Driver = drv
			var reg structs.JobRegisterResponse
			if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
				t.Fatalf("register: %v", err)
			}
			defer func() {
				_, _, _ = nc.Jobs().Deregister(job.ID, true, nil)
			}()
			var alloc *nomad.Allocation
			pollUntil(t, "the allocation to run", 20*time.Second, func() bool {
				stubs, _, err := nc.Jobs().Allocations(job.ID, false, nil)
				if err != nil || len(stubs) == 0 || stubs[0].ClientStatus != structs.AllocClientStatusRunning {
					return false
				}
				alloc, _, err = nc.Allocations().Info(stubs[0].ID, nil)
				return err == nil
			})
			var usage *nomad.AllocResourceUsage
			pollUntil(t, "memory in use", 10*time.Second, func() bool {
				usage, err = nc.Allocations().Stats(alloc, nil)
				return err == nil && usage.Tasks["t"] != nil && usage.Tasks["t"].ResourceUsage.MemoryStats.RSS > 0
			})
			tu := usage.Tasks["t"]
			if usage.ResourceUsage == nil || usage.ResourceUsage.MemoryStats.RSS < tu.ResourceUsage.MemoryStats.RSS ||
				tu.ResourceUsage.CpuStats == nil || len(tu.ResourceUsage.MemoryStats.Measured) == 0 || tu.Timestamp == 0 {
				t.Fatalf("usage %+v, task %+v", usage.ResourceUsage, tu.ResourceUsage)
			}
		})
	}
	hs, err := nc.Nodes().Stats(c.NodeID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hs.Memory == nil || hs.Memory.Total == 0 || hs.Memory.Used == 0 || len(hs.CPU) == 0 || hs.Uptime == 0 ||
		hs.AllocDirStats == nil || hs.AllocDirStats.Size == 0 {
		t.Fatalf("host stats %+v", hs)
	}
	if _, err := nc.Nodes().Stats("no-such-node", nil); err == nil {
		t.Fatal("stats of an unknown node answered")
	}
}
