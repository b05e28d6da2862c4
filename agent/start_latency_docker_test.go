package agent

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/agent/client/driver/docker/dockertest"
	"github.com/drover-project/drover/structs"
)

// TestStartLatency measures, on a dev agent, the time from placement (the
// allocation's creation) to running (the task's start) for 100 tasks of
// one job on the one node, for raw_exec and for docker. It is a
// measurement, not a check: it runs only with DROVER_START_LATENCY=1
// (never in make test):
//
//	DROVER_START_LATENCY=1 go test -run TestStartLatencyDocker -v -timeout 20m ./agent/
func TestStartLatencyDocker(t *testing.T) {
	if os.Getenv("DROVER_START_LATENCY") == "" {
		t.Skip("a measurement: set DROVER_START_LATENCY=1 to run it (raw_exec against docker)")
	}
	const n = 100
	_, img := dockertest.Image(t)
	for _, tc := range []struct {
		driver string
		config map[string]any
	}{
		{"raw_exec", map[string]any{"command": "/bin/sleep", "args": []any{"600"}}},
		{"docker", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"600"}}},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			a := startDevClientAgent(t)
			nc, err := nomad.NewClient(&nomad.Config{Address: a.HTTPURL()})
			if err != nil {
				t.Fatal(err)
			}
			pollUntil(t, "the node to offer "+tc.driver, 20*time.Second, func() bool {
				nd, _, err := nc.Nodes().Info(a.Client().NodeID(), nil)
				return err == nil && nd.Drivers[tc.driver] != nil && nd.Drivers[tc.driver].Healthy
			})
			id := "latency-" + tc.driver
			job := dockerJob(id, "service", tc.config)
			job.TaskGroups[0].Count = ptr(n)
			job.TaskGroups[0].Tasks[0].Driver = tc.driver
			job.TaskGroups[0].Tasks[0].Resources = &nomad.Resources{CPU: ptr(10), MemoryMB: ptr(16)}
			start := time.Now()
			if _, _, err := nc.Jobs().Register(job, nil); err != nil {
				t.Fatal(err)
			}
			var allocs []*nomad.Allocation
			deadline := time.Now().Add(10 * time.Minute)
			for {
				stubs, _, err := nc.Jobs().Allocations(id, false, nil)
				running := 0
				for _, s := range stubs {
					if s.ClientStatus == structs.AllocClientStatusRunning {
						running++
					}
				}
				if err == nil && running == n {
					for _, s := range stubs {
						al, _, err := nc.Allocations().Info(s.ID, nil)
						if err != nil {
							t.Fatal(err)
						}
						allocs = append(allocs, al)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d running after 10 minutes", running, n)
				}
				time.Sleep(100 * time.Millisecond)
			}
			wall := time.Since(start)
			lat := make([]time.Duration, 0, n)
			for _, al := range allocs {
				ts := al.TaskStates["t"]
				if ts == nil || ts.StartedAt.IsZero() {
					t.Fatalf("allocation %s has no start time", al.ID)
				}
				lat = append(lat, ts.StartedAt.Sub(time.Unix(0, al.CreateTime)))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond) }
			t.Logf("%s: %d tasks, placement to running: p50 %v, p90 %v, p99 %v, max %v; registration to all running: %v",
				tc.driver, n, q(0.5), q(0.9), q(0.99), lat[len(lat)-1].Round(time.Millisecond), wall.Round(time.Millisecond))
			fmt.Fprintf(os.Stderr, "START_LATENCY %s n=%d p50=%v p90=%v p99=%v max=%v all_running=%v\n",
				tc.driver, n, q(0.5), q(0.9), q(0.99), lat[len(lat)-1].Round(time.Millisecond), wall.Round(time.Millisecond))
		})
	}
}
