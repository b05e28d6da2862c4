package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestClusterPreemption: on three servers (plans cross the wire from
// workers on followers), with service preemption enabled through a
// follower, a priority-80 job that fits only by evicting one of two
// priority-50 allocations evicts exactly one; every server holds the
// eviction with its preemptor, and the evicted job's preemption
// evaluation leaves it blocked.
func TestClusterPreemption(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := pipelineCluster(t, 3, 2)
	leader := c.WaitForLeader(t, 10*time.Second)
	var follower *server.Server
	for _, s := range c.Servers() {
		if s != leader {
			follower = s
			break
		}
	}
	var set structs.SchedulerSetConfigurationResponse
	if err := follower.RPC("Operator.SchedulerSetConfiguration", &structs.SchedulerSetConfigRequest{Config: structs.SchedulerConfiguration{
		PreemptionConfig: structs.PreemptionConfig{ServiceSchedulerEnabled: true}}}, &set); err != nil || !set.Updated {
		t.Fatalf("set config: %+v %v", set, err)
	}
	node := mock.Node()
	node.NodeResources.Memory.MemoryMB = 1256 // 1000 MB usable
	registerNode(t, follower, node)

	low := smallJob("low", 2)
	low.TaskGroups[0].Tasks[0].Resources.MemoryMB = 400
	submitJob(t, follower, low)
	waitFor(t, 20*time.Second, func() string {
		if n := len(liveAllocs(leader.State(), "default", "low")); n != 2 {
			return fmt.Sprintf("low has %d live allocations", n)
		}
		return ""
	})
	high := smallJob("high", 1)
	high.Priority = 80
	high.TaskGroups[0].Tasks[0].Resources.MemoryMB = 600
	submitJob(t, follower, high)

	for _, s := range c.Servers() {
		waitFor(t, 20*time.Second, func() string {
			st := s.State()
			placed := liveAllocs(st, "default", "high")
			if len(placed) != 1 {
				return fmt.Sprintf("server %s: high has %d live allocations", s.RPCAddr(), len(placed))
			}
			if n := len(liveAllocs(st, "default", "low")); n != 1 {
				return fmt.Sprintf("server %s: low has %d live allocations", s.RPCAddr(), n)
			}
			all, _ := st.AllocsByJob(nil, "default", "low")
			evicted := 0
			for _, a := range all {
				if a.DesiredStatus == structs.AllocDesiredStatusEvict {
					if a.PreemptedByAllocation != placed[0].ID || len(placed[0].PreemptedAllocations) != 1 || placed[0].PreemptedAllocations[0] != a.ID {
						return fmt.Sprintf("eviction %s by %q; preemptor lists %v", a.ID, a.PreemptedByAllocation, placed[0].PreemptedAllocations)
					}
					evicted++
				}
			}
			if evicted != 1 {
				return fmt.Sprintf("server %s: %d evicted", s.RPCAddr(), evicted)
			}
			evals, _ := st.EvalsByJob(nil, "default", "low")
			preempted, blocked := false, false
			for _, e := range evals {
				preempted = preempted || e.TriggeredBy == structs.EvalTriggerPreemption
				blocked = blocked || e.Status == structs.EvalStatusBlocked
			}
			if !preempted || !blocked {
				return fmt.Sprintf("server %s: low's evaluations: preemption %v, blocked %v", s.RPCAddr(), preempted, blocked)
			}
			return ""
		})
	}
}
