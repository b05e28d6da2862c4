package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// heartbeatLoop sends ready heartbeats for node every interval until ctx
// ends, and records when the last one succeeded and its TTL. Like a
// client, it carries on after a failed heartbeat (one in flight to a
// leader that dies fails).
func heartbeatLoop(ctx context.Context, t *testing.T, s *server.Server, node *structs.Node, interval time.Duration, last *lastBeat) {
	for {
		var resp structs.NodeUpdateResponse
		err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID, Status: structs.NodeStatusReady}, &resp)
		switch {
		case err == nil:
			last.set(resp.HeartbeatTTL)
		case ctx.Err() == nil:
			t.Logf("heartbeat %s: %v", node.ID, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

type lastBeat struct {
	mu  sync.Mutex
	at  time.Time
	ttl time.Duration
}

func (l *lastBeat) set(ttl time.Duration) {
	l.mu.Lock()
	l.at, l.ttl = time.Now(), ttl
	l.mu.Unlock()
}

func (l *lastBeat) get() (time.Time, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at, l.ttl
}

// TestNodeDownReplacesAllocs: a node that stops heartbeating is marked down
// within its TTL plus the grace period, its allocations are lost, and
// their replacements run on the other nodes.
func TestNodeDownReplacesAllocs(t *testing.T) {
	const grace = 200 * time.Millisecond
	s := schedServer(t, 2, func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = 300 * time.Millisecond
		cfg.HeartbeatGrace = grace
		cfg.FailoverHeartbeatTTL = time.Second
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	doomed := mock.Node()
	if ttl := registerNode(t, s, doomed).HeartbeatTTL; ttl < 300*time.Millisecond || ttl >= 600*time.Millisecond {
		t.Fatalf("heartbeat TTL %v, want in [300ms, 600ms)", ttl)
	}
	doomedCtx, stopDoomed := context.WithCancel(ctx)
	var doomedBeat lastBeat
	wg.Add(1)
	go func() {
		defer wg.Done()
		heartbeatLoop(doomedCtx, t, s, doomed, 50*time.Millisecond, &doomedBeat)
	}()

	job := smallJob("web", 6)
	submitJob(t, s, job)
	st := s.State()
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	for _, a := range liveAllocs(st, job.Namespace, job.ID) {
		if a.NodeID != doomed.ID {
			t.Fatalf("alloc %s on %s, want the only node %s", a.ID, a.NodeID, doomed.ID)
		}
	}

	for i := 0; i < 2; i++ {
		n := mock.Node()
		registerNode(t, s, n)
		var beat lastBeat
		wg.Add(1)
		go func() {
			defer wg.Done()
			heartbeatLoop(ctx, t, s, n, 50*time.Millisecond, &beat)
		}()
	}

	stopDoomed()
	waitFor(t, 5*time.Second, func() string {
		node, err := st.NodeByID(nil, doomed.ID)
		if err != nil {
			return err.Error()
		}
		if node.Status != structs.NodeStatusDown {
			return "node is " + node.Status
		}
		return ""
	})
	last, ttl := doomedBeat.get()
	if took := time.Since(last); took > ttl+grace+time.Second {
		t.Errorf("node marked down %v after its last heartbeat; TTL %v + grace %v", took, ttl, grace)
	}

	waitFor(t, 10*time.Second, func() string {
		live := liveAllocs(st, job.Namespace, job.ID)
		if len(live) != 6 {
			return fmt.Sprintf("%d live allocations", len(live))
		}
		for _, a := range live {
			if a.NodeID == doomed.ID {
				return "allocation " + a.Name + " still on the down node"
			}
		}
		return ""
	})
	allocs, err := st.AllocsByNode(nil, doomed.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allocs {
		if a.ClientStatus != structs.AllocClientStatusLost || !a.ServerTerminalStatus() {
			t.Errorf("alloc %s on the down node is %s/%s, want stopped and lost", a.ID, a.DesiredStatus, a.ClientStatus)
		}
	}
	if len(allocs) != 6 {
		t.Errorf("%d allocations on the down node, want the original 6", len(allocs))
	}
	// The down node's evaluation (node-update) completes: the worker
	// writes its status after the plan that replaced the allocations.
	waitFor(t, 5*time.Second, func() string {
		var nodeEvals int
		for _, e := range jobEvals(t, st, job) {
			if e.TriggeredBy == structs.EvalTriggerNodeUpdate && e.NodeID == doomed.ID {
				nodeEvals++
				if e.Status != structs.EvalStatusComplete {
					return fmt.Sprintf("node-update eval %s is %s", e.ID, e.Status)
				}
			}
		}
		if nodeEvals != 1 {
			return fmt.Sprintf("%d node-update evaluations for the down node, want 1", nodeEvals)
		}
		return ""
	})
	checkPlacements(t, st)
}

// TestHeartbeatsAcrossLeaderChange: after a leader change, a node that
// keeps heartbeating (through any server) stays up, and one that stopped
// is marked down once the failover TTL and grace run out.
func TestHeartbeatsAcrossLeaderChange(t *testing.T) {
	c := pipelineCluster(t, 3, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = 300 * time.Millisecond
		cfg.HeartbeatGrace = 200 * time.Millisecond
		cfg.FailoverHeartbeatTTL = 500 * time.Millisecond
	}))
	leader := c.WaitForLeader(t, 10*time.Second)
	var via *server.Server
	for _, s := range c.Servers() {
		if s != leader {
			via = s
		}
	}
	alive, silent := mock.Node(), mock.Node()
	registerNode(t, via, alive)
	registerNode(t, via, silent)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var beat lastBeat
	wg.Add(1)
	go func() {
		defer wg.Done()
		heartbeatLoop(ctx, t, via, alive, 50*time.Millisecond, &beat)
	}()

	c.Kill(c.Index(leader))
	next := c.WaitForLeader(t, 10*time.Second)
	st := next.State()
	waitFor(t, 10*time.Second, func() string {
		n, err := st.NodeByID(nil, silent.ID)
		if err != nil {
			return err.Error()
		}
		if n.Status != structs.NodeStatusDown {
			return "silent node is " + n.Status
		}
		return ""
	})
	if n, err := st.NodeByID(nil, alive.ID); err != nil || n.Status != structs.NodeStatusReady {
		t.Fatalf("heartbeating node after the leader change: %+v, %v", n, err)
	}
}

// TestInitializingNodeHeartbeats: a node that registers initializing and
// heartbeats as initializing (its readiness gate not passed) stays
// initializing past its TTL and grace, is never marked down, gets no
// allocation and causes no evaluation; when it reports ready, the status
// change evaluates every system job for it and the system job is placed
// there.
func TestInitializingNodeHeartbeats(t *testing.T) {
	s := schedServer(t, 1, func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = 300 * time.Millisecond
		cfg.HeartbeatGrace = 200 * time.Millisecond
		cfg.FailoverHeartbeatTTL = time.Second
	})
	sys := mock.Job()
	sys.ID, sys.Name, sys.Type = "sys", "sys", structs.JobTypeSystem
	sys.TaskGroups[0].Count = 1
	sys.TaskGroups[0].Migrate = nil
	submitJob(t, s, sys)

	node := mock.Node()
	node.Status = structs.NodeStatusInit
	node.StatusDescription = "readiness not checked yet"
	if resp := registerNode(t, s, node); len(resp.EvalIDs) != 0 {
		t.Fatalf("registering an initializing node created evaluations %v", resp.EvalIDs)
	}
	evalsBefore, err := s.State().EvalsByJob(nil, sys.Namespace, sys.ID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(1500 * time.Millisecond) // about three TTLs plus grace
	for time.Now().Before(deadline) {
		var resp structs.NodeUpdateResponse
		if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID,
			Status: structs.NodeStatusInit}, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.HeartbeatTTL <= 0 || len(resp.EvalIDs) != 0 {
			t.Fatalf("heartbeat reply: TTL %v evals %v", resp.HeartbeatTTL, resp.EvalIDs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	n, err := s.State().NodeByID(nil, node.ID)
	if err != nil || n.Status != structs.NodeStatusInit || n.StatusDescription != "readiness not checked yet" {
		t.Fatalf("node after heartbeats: %+v, %v", n, err)
	}
	evals, err := s.State().EvalsByJob(nil, sys.Namespace, sys.ID)
	if err != nil || len(evals) != len(evalsBefore) {
		t.Fatalf("evaluations while initializing: %d, before %d (%v)", len(evals), len(evalsBefore), err)
	}
	if allocs := liveAllocs(s.State(), sys.Namespace, sys.ID); len(allocs) != 0 {
		t.Fatalf("%d system allocations on an initializing node", len(allocs))
	}

	var resp structs.NodeUpdateResponse
	if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID,
		Status: structs.NodeStatusReady}, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.EvalIDs) != 1 {
		t.Fatalf("ready: evaluations %v, want one for the system job", resp.EvalIDs)
	}
	ev, err := s.State().EvalByID(nil, resp.EvalIDs[0])
	if err != nil || ev.JobID != sys.ID || ev.NodeID != node.ID || ev.TriggeredBy != structs.EvalTriggerNodeUpdate {
		t.Fatalf("evaluation %+v, %v", ev, err)
	}
	waitFor(t, 10*time.Second, func() string {
		if allocs := liveAllocs(s.State(), sys.Namespace, sys.ID); len(allocs) != 1 || allocs[0].NodeID != node.ID {
			return fmt.Sprintf("%d system allocations", len(allocs))
		}
		return ""
	})
}
