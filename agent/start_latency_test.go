package agent

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestStartLatency measures, for one driver, the time from placement
// (the allocation's creation) to running (the task's StartedAt) of 100
// tasks on one node. It is a measurement, not a check: it runs only with
// DROVER_START_LATENCY set to the drivers to measure, for example
//
//	DROVER_START_LATENCY=raw_exec,exec go test -run TestStartLatency -v ./agent/
//
// Results are in docs/benchmarks.md.
func TestStartLatency(t *testing.T) {
	drivers := os.Getenv("DROVER_START_LATENCY")
	if drivers == "" {
		t.Skip("a measurement: set DROVER_START_LATENCY=raw_exec,exec to run it")
	}
	for _, drv := range splitComma(drivers) {
		t.Run(drv, func(t *testing.T) { measureStartLatency(t, drv, 100) })
	}
}

func splitComma(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != ',' {
			i++
		}
		if i > 0 {
			out = append(out, s[:i])
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

func measureStartLatency(t *testing.T, drv string, n int) {
	a := startDevClientAgent(t)
	srv, c := a.Server(), a.Client()
	pollUntil(t, "node ready", 15*time.Second, func() bool {
		var resp structs.SingleNodeResponse
		err := srv.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: c.NodeID()}, &resp)
		return err == nil && resp.Node != nil && resp.Node.Status == structs.NodeStatusReady &&
			resp.Node.Drivers[drv] != nil && resp.Node.Drivers[drv].Healthy
	})
	job := rawExecJob("latency-"+drv, structs.JobTypeService, "exec sleep 600")
	job.TaskGroups[0].Count = n
	task := job.TaskGroups[0].Tasks[0]
	task.Driver = drv
	task.Resources = &structs.Resources{CPU: 10, MemoryMB: 16}
	start := time.Now()
	var reg structs.JobRegisterResponse
	if err := srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	var allocs []*structs.Allocation
	pollUntil(t, "all running", 120*time.Second, func() bool {
		allocs = c.Allocs()
		running := 0
		for _, al := range allocs {
			if ts := al.TaskStates.MustMap()["t"]; ts != nil && ts.State == structs.TaskStateRunning {
				running++
			}
		}
		return running == n
	})
	wall := time.Since(start)
	var lat []time.Duration
	for _, al := range allocs {
		ts := al.TaskStates.MustMap()["t"]
		lat = append(lat, ts.StartedAt.Sub(time.Unix(0, al.CreateTime)))
	}
	slices.Sort(lat)
	pct := func(p int) time.Duration { return lat[(len(lat)-1)*p/100].Round(time.Millisecond) }
	t.Logf("%s: %d tasks running %v after registration; placement -> running p50 %v, p90 %v, p99 %v, max %v",
		drv, n, wall.Round(time.Millisecond), pct(50), pct(90), pct(99), lat[len(lat)-1].Round(time.Millisecond))
	fmt.Fprintf(os.Stderr, "RESULT %s n=%d wall=%v p50=%v p90=%v p99=%v max=%v\n", drv, n, wall.Round(time.Millisecond),
		pct(50), pct(90), pct(99), lat[len(lat)-1].Round(time.Millisecond))
}
