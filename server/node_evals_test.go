package server_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// systemJob is a system job whose allocation fits many to a mock node.
func systemJob(id string) *structs.Job {
	job := smallJob(id, 1)
	job.Type = structs.JobTypeSystem
	job.TaskGroups[0].ReschedulePolicy = nil
	job.TaskGroups[0].Migrate = nil
	return job
}

// nodeUpdateEvals counts the evaluations triggered by node events.
func nodeUpdateEvals(t testing.TB, st *state.StateStore) int {
	t.Helper()
	evals, err := st.Evals(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerNodeUpdate {
			n++
		}
	}
	return n
}

// systemPlaced returns "" once every ready node runs one live allocation
// of each system job and every evaluation is terminal.
func systemPlaced(st *state.StateStore, jobs []*structs.Job, nodes []*structs.Node) string {
	for _, j := range jobs {
		on := map[string]int{}
		for _, a := range liveAllocs(st, j.Namespace, j.ID) {
			on[a.NodeID]++
		}
		for _, n := range nodes {
			if on[n.ID] != 1 {
				return fmt.Sprintf("job %s has %d allocations on node %s", j.ID, on[n.ID], n.ID)
			}
		}
		if len(on) != len(nodes) {
			return fmt.Sprintf("job %s runs on %d nodes, want %d", j.ID, len(on), len(nodes))
		}
	}
	evals, _ := st.Evals(nil)
	for _, e := range evals {
		if !e.TerminalStatus() && e.Status != structs.EvalStatusBlocked {
			return fmt.Sprintf("eval %s (job %s, %s) is %s", e.ID, e.JobID, e.TriggeredBy, e.Status)
		}
	}
	return ""
}

// TestNodeJoinStormCoalesced: nodes join, through every server, while the
// system jobs' evaluations are pending and being processed by workers on
// all three servers (so on followers whose state lags the leader's). Every
// node ends up with its allocation of every system job, and the joins
// cost a few evaluations per job, not one per node and job.
func TestNodeJoinStormCoalesced(t *testing.T) {
	const (
		nJobs  = 3
		nNodes = 150
		window = 200 * time.Millisecond
	)
	c := pipelineCluster(t, 3, 2, func(_ int, cfg *server.Config) { cfg.NodeEvalWindow = window })
	leader := c.WaitForLeader(t, 10*time.Second)
	var jobs []*structs.Job
	for i := range nJobs {
		job := systemJob(fmt.Sprintf("sys-%d", i))
		submitJob(t, leader, job)
		jobs = append(jobs, job)
	}
	nodes := make([]*structs.Node, nNodes)
	for i := range nodes {
		nodes[i] = mock.Node()
	}
	servers := c.Servers()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < nNodes; i += 6 {
				registerNode(t, servers[rand.IntN(len(servers))], nodes[i])
				if i%10 == 0 {
					time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	storm := time.Since(start)
	st := leader.State()
	waitFor(t, 60*time.Second, func() string { return systemPlaced(st, jobs, nodes) })
	checkPlacements(t, st)

	got := nodeUpdateEvals(t, st)
	// At most one paced evaluation per job and window, plus the one due
	// at once and one waiting behind a delivery, per job.
	bound := nJobs * (int(storm/window) + 3)
	t.Logf("%d nodes joined in %v: %d node-update evaluations (bound %d; uncoalesced %d)", nNodes, storm, got, bound, nJobs*nNodes)
	if got > bound {
		t.Errorf("%d node-update evaluations, want at most %d", got, bound)
	}
}

// TestNodeFlapCoalesced: a node whose status flaps between down and ready
// many times within a window costs each job with allocations on it (and
// each system job) a few evaluations, not one per flap; once it settles
// ready, every job runs its count, and the system job runs on it.
func TestNodeFlapCoalesced(t *testing.T) {
	const flaps = 20
	// The quarantine is off: twenty flaps are node faults past its
	// threshold, and a quarantined node rightly gets no system allocation
	// (TestQuarantine* cover that); this test is about the evaluations.
	s := schedServer(t, 2, func(cfg *server.Config) {
		cfg.NodeEvalWindow = time.Second
		cfg.NodeQuarantine.Disabled = true
	})
	flappy, steady := mock.Node(), mock.Node()
	registerNode(t, s, flappy)
	registerNode(t, s, steady)
	web, sys := smallJob("web", 4), systemJob("sys")
	submitJob(t, s, web)
	submitJob(t, s, sys)
	st := s.State()
	nodes := []*structs.Node{flappy, steady}
	waitFor(t, 10*time.Second, func() string { return systemPlaced(st, []*structs.Job{sys}, nodes) })
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{web}) })
	before := nodeUpdateEvals(t, st)

	for i := range flaps * 2 {
		status := structs.NodeStatusDown
		if i%2 == 1 {
			status = structs.NodeStatusReady
		}
		var resp structs.NodeUpdateResponse
		if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
			NodeID: flappy.ID, SecretID: flappy.SecretID, Status: status,
		}, &resp); err != nil {
			t.Fatalf("flap %d: %v", i, err)
		}
	}
	waitFor(t, 20*time.Second, func() string {
		if msg := systemPlaced(st, []*structs.Job{sys}, nodes); msg != "" {
			return msg
		}
		return jobsPlaced(st, []*structs.Job{web})
	})
	checkPlacements(t, st)
	got := nodeUpdateEvals(t, st) - before
	// Uncoalesced: every flap evaluates both jobs (2 per flap).
	t.Logf("%d flaps: %d node-update evaluations (uncoalesced %d)", flaps, got, 2*2*flaps)
	if got > 2*4 {
		t.Errorf("%d node-update evaluations for %d flaps, want at most %d", got, flaps, 2*4)
	}
}

// TestNodeJoinsAbsorbedAcrossLeaderChange: with no worker anywhere, nodes
// join while a system job's registration evaluation is pending: every
// join is absorbed by it (no node-update evaluation is written). The
// leader then dies and comes back with workers, as a follower: its
// workers plan the restored evaluation from a snapshot at or past the
// index at which the new leader restored it, so every node gets its
// allocation although no evaluation names them.
func TestNodeJoinsAbsorbedAcrossLeaderChange(t *testing.T) {
	var workers atomic.Int64
	workers.Store(-1)
	c := pipelineCluster(t, 3, -1, func(_ int, cfg *server.Config) { cfg.NumSchedulers = int(workers.Load()) })
	leader := c.WaitForLeader(t, 10*time.Second)
	job := systemJob("sys")
	submitJob(t, leader, job)
	var nodes []*structs.Node
	for range 30 {
		n := mock.Node()
		registerNode(t, c.Servers()[len(nodes)%3], n)
		nodes = append(nodes, n)
	}
	// A join racing the leader's establishment (its broker not yet
	// holding the registration evaluation) may write one.
	absorbed := nodeUpdateEvals(t, leader.State())
	if absorbed > 1 {
		t.Fatalf("%d node-update evaluations, want every join absorbed by the pending registration evaluation", absorbed)
	}

	li := c.Index(leader)
	c.Kill(li)
	workers.Store(2)
	c.Restart(t, li)
	next := c.WaitForLeader(t, 10*time.Second)
	st := next.State()
	waitFor(t, 30*time.Second, func() string { return systemPlaced(st, []*structs.Job{job}, nodes) })
	checkPlacements(t, st)
	if got := nodeUpdateEvals(t, st); got != absorbed {
		t.Errorf("%d node-update evaluations after the leader change, want %d", got, absorbed)
	}
}
