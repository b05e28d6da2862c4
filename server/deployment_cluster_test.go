package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// reportHealthy reports, as the clients would (through any server, with
// the nodes' secrets), every live allocation of deployment depID without
// health as running and healthy. It returns how many it reported.
func reportHealthy(t *testing.T, c interface{ Servers() []*server.Server }, st *state.StateStore, ns, jobID, depID string) int {
	t.Helper()
	var upd []*structs.Allocation
	for _, a := range liveAllocs(st, ns, jobID) {
		if a.DeploymentID != depID || a.DeploymentStatus.HasHealth() {
			continue
		}
		healthy := true
		upd = append(upd, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Now().UTC()}})
	}
	if len(upd) == 0 {
		return 0
	}
	req := clientUpdate(t, st, upd...)
	for _, s := range c.Servers() {
		if err := s.RPC("Node.UpdateAlloc", req, &structs.GenericResponse{}); err == nil {
			return len(upd)
		}
	}
	return 0 // no server took it now (an election): the next round retries
}

// TestClusterDeploymentSurvivesLeaderFailover: a rolling update (count 6,
// max_parallel 2) is half done when the leader is killed; the new leader
// continues the same deployment to success (health reports make the
// evaluations that place each batch), never more than 2 in flight, and
// no allocation is replaced twice.
func TestClusterDeploymentSurvivesLeaderFailover(t *testing.T) {
	c := pipelineCluster(t, 3, 2)
	leader := c.WaitForLeader(t, 10*time.Second)
	for i := 0; i < 3; i++ {
		registerNode(t, leader, mock.Node())
	}
	job := smallJob("rolling", 6)
	u := structs.DefaultUpdateStrategy()
	u.MaxParallel, u.MinHealthyTime, u.HealthCheck = 2, time.Second, structs.UpdateHealthCheckTaskStates
	job.TaskGroups[0].Update = u
	submitJob(t, leader, job)

	// deployment waits for the deployment of version and reports health
	// of its allocations until it ends; kill runs once, when half of the
	// new allocations are healthy.
	deployment := func(version uint64, kill func()) *structs.Deployment {
		var dep *structs.Deployment
		waitFor(t, 60*time.Second, func() string {
			l := c.WaitForLeader(t, 10*time.Second)
			st := l.State()
			list, err := st.DeploymentsByJobID(nil, job.Namespace, job.ID, false)
			if err != nil {
				return err.Error()
			}
			dep = nil
			for _, d := range list {
				if d.JobVersion == version {
					dep = d
				}
			}
			if dep == nil {
				return fmt.Sprintf("no deployment of version %d yet", version)
			}
			inFlight := 0
			for _, a := range liveAllocs(st, job.Namespace, job.ID) {
				if a.DeploymentID == dep.ID && !a.DeploymentStatus.IsHealthy() {
					inFlight++
				}
			}
			if version > 0 && inFlight > 2 { // a first version is placed at once
				t.Fatalf("%d replacements in flight, max_parallel is 2", inFlight)
			}
			if kill != nil && dep.TaskGroups["web"].HealthyAllocs >= 2 {
				kill()
				kill = nil
				return "leader killed"
			}
			if dep.Status != structs.DeploymentStatusRunning {
				return ""
			}
			reportHealthy(t, c, st, job.Namespace, job.ID, dep.ID)
			return fmt.Sprintf("deployment %s: %+v", dep.Status, dep.TaskGroups["web"])
		})
		return dep
	}
	if d := deployment(0, nil); d.Status != structs.DeploymentStatusSuccessful {
		t.Fatalf("first deployment: %s (%s)", d.Status, d.StatusDescription)
	}

	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "1"}
	submitJob(t, c.WaitForLeader(t, 10*time.Second), v1)
	var before, killed string
	d := deployment(1, func() {
		l := c.WaitForLeader(t, 10*time.Second)
		dep, _ := l.State().LatestDeploymentByJobID(nil, job.Namespace, job.ID)
		before, killed = dep.ID, l.RPCAddr()
		t.Logf("killing leader %s with deployment %s at %+v", killed, dep.ID, dep.TaskGroups["web"])
		c.Kill(c.Index(l))
	})
	if killed == "" || c.WaitForLeader(t, 10*time.Second).RPCAddr() == killed {
		t.Fatalf("the leader was not killed mid-rollout (%q)", killed)
	}
	if d.Status != structs.DeploymentStatusSuccessful || d.ID != before {
		t.Fatalf("deployment after failover: %s (%s), ID %s, before %s", d.Status, d.StatusDescription, d.ID, before)
	}
	st := c.WaitForLeader(t, 10*time.Second).State()
	all, err := st.AllocsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	successors := map[string]int{}
	newVersion := 0
	for _, a := range all {
		if a.PreviousAllocation != "" {
			successors[a.PreviousAllocation]++
			if successors[a.PreviousAllocation] > 1 {
				t.Fatalf("allocation %s replaced twice", a.PreviousAllocation)
			}
		}
		if a.Job.Version == 1 {
			newVersion++
		}
	}
	if newVersion != 6 {
		t.Fatalf("%d allocations of version 1, want exactly 6", newVersion)
	}
	job1, err := st.JobByID(nil, job.Namespace, job.ID)
	if err != nil || !job1.Stable || job1.Version != 1 {
		t.Fatalf("job after the rollout: %+v, %v", job1, err)
	}
}
