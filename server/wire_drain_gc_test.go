package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// drainGCServer starts a single leading server whose drainer and garbage
// collector run with cfg.
func drainGCServer(t *testing.T, cfg DrainGCConfig) *Server {
	t.Helper()
	s, err := NewServer(&Config{
		Name: "drain", BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond,
		NumSchedulers: 2, LeaderWorkerFraction: 1, DrainGC: cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	dgWait(t, 10*time.Second, func() string {
		if !s.IsLeader() || !s.leaderEstablished.Load() {
			return "not leading yet"
		}
		return ""
	})
	return s
}

// dgWait polls cond until it returns "" or timeout passes.
func dgWait(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done within %v: %s", timeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeClient plays a client agent for one node: it watches the node's
// allocations (Node.GetClientAllocs, Alloc.GetAllocs) and reports a new
// allocation running after startDelay (and, outside a deployment,
// healthy at once, as a real client reports it by the migrate block), and
// a stopped one complete at once (Node.UpdateAlloc).
func fakeClient(ctx context.Context, t *testing.T, s *Server, node *structs.Node, startDelay time.Duration) {
	report := func(id, status string, healthy bool) {
		u := &structs.Allocation{ID: id, ClientStatus: status}
		if healthy {
			yes := true
			u.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &yes, Timestamp: time.Now().UTC()}
		}
		upd := &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{u},
			NodeSecrets: map[string]string{node.ID: node.SecretID}}
		if err := s.RPC("Node.UpdateAlloc", upd, &structs.GenericResponse{}); err != nil && ctx.Err() == nil {
			t.Errorf("client %s: reporting %s %s: %v", node.Name, id, status, err)
		}
	}
	seen := map[string]uint64{}
	var index uint64
	for ctx.Err() == nil {
		var resp structs.NodeClientAllocsResponse
		req := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID,
			QueryOptions: structs.QueryOptions{MinQueryIndex: index, MaxQueryTime: 100 * time.Millisecond}}
		if err := s.RPC("Node.GetClientAllocs", req, &resp); err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		index = resp.Index
		var changed []string
		for _, a := range resp.Allocs {
			if seen[a.ID] != a.AllocModifyIndex {
				seen[a.ID] = a.AllocModifyIndex
				changed = append(changed, a.ID)
			}
		}
		if len(changed) == 0 {
			continue
		}
		var got structs.AllocsGetResponse
		if err := s.RPC("Alloc.GetAllocs", &structs.AllocsGetRequest{AllocIDs: changed}, &got); err != nil {
			continue
		}
		for _, a := range got.Allocs {
			switch {
			case a.ServerTerminalStatus() && !a.ClientTerminalStatus():
				report(a.ID, structs.AllocClientStatusComplete, false)
			case a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusPending:
				id := a.ID
				healthy := a.DeploymentID == "" && (a.Job == nil || a.Job.Type == structs.JobTypeService)
				time.AfterFunc(startDelay, func() {
					if ctx.Err() == nil {
						report(id, structs.AllocClientStatusRunning, healthy)
					}
				})
			}
		}
	}
}

// startClients registers n nodes and runs a fake client for each until
// the test ends.
func startClients(t *testing.T, s *Server, n int, startDelay time.Duration) []*structs.Node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var nodes []*structs.Node
	for i := 0; i < n; i++ {
		node := mock.Node()
		node.Name = fmt.Sprintf("client-%d", i)
		if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &structs.NodeUpdateResponse{}); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fakeClient(ctx, t, s, node, startDelay)
		}()
	}
	return nodes
}

// runningAllocs returns the job's allocations that the servers want
// running and the client reports running, by node.
func runningAllocs(s *Server, ws memdb.WatchSet, job *structs.Job) (int, map[string]int) {
	allocs, _ := s.State().AllocsByJob(ws, job.Namespace, job.ID)
	byNode := map[string]int{}
	total := 0
	for _, a := range allocs {
		if a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusRunning {
			byNode[a.NodeID]++
			total++
		}
	}
	return total, byNode
}

// TestDrainMovesOneAtATime is the check: three clients, a service
// job of count 6 with migrate max_parallel 1; draining one client leaves
// 6 running on the other two, never fewer than 5 running meanwhile, and
// completes the drain (node ineligible, "Node drain complete").
func TestDrainMovesOneAtATime(t *testing.T) {
	s := drainGCServer(t, DrainGCConfig{DrainerMinInterval: 20 * time.Millisecond})
	startClients(t, s, 3, 100*time.Millisecond)
	job := mock.Job()
	job.ID, job.Name = "web", "web"
	tg := job.TaskGroups[0]
	tg.Count = 6
	tg.Tasks[0].Resources = &structs.Resources{CPU: 50, MemoryMB: 64, DiskMB: 10}
	tg.Migrate = &structs.MigrateStrategy{MaxParallel: 1}
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	var byNode map[string]int
	dgWait(t, 15*time.Second, func() string {
		var n int
		if n, byNode = runningAllocs(s, nil, job); n != 6 {
			return fmt.Sprintf("%d running, want 6", n)
		}
		return ""
	})
	drained := ""
	for id, n := range byNode {
		if drained == "" || n > byNode[drained] || (n == byNode[drained] && id < drained) {
			drained = id
		}
	}

	// Watch every state change of the job's allocations until
	// the drain is over.
	ctx, cancel := context.WithCancel(context.Background())
	minRunning := make(chan int, 1)
	go func() {
		low := 6
		defer func() { minRunning <- low }()
		for ctx.Err() == nil {
			ws := memdb.NewWatchSet()
			n, _ := runningAllocs(s, ws, job)
			low = min(low, n)
			_ = ws.WatchCtx(ctx)
		}
	}()

	req := &structs.NodeUpdateDrainRequest{NodeID: drained, DrainStrategy: &structs.DrainStrategy{Deadline: time.Minute}}
	if err := s.RPC("Node.UpdateDrain", req, &structs.NodeUpdateResponse{}); err != nil {
		t.Fatal(err)
	}
	dgWait(t, 30*time.Second, func() string {
		n, byNode := runningAllocs(s, nil, job)
		node, err := s.State().NodeByID(nil, drained)
		switch {
		case err != nil:
			return err.Error()
		case byNode[drained] > 0:
			return fmt.Sprintf("%d still running on the drained node", byNode[drained])
		case n != 6:
			return fmt.Sprintf("%d running, want 6", n)
		case node.DrainStrategy != nil || node.Drain:
			return "drain not complete"
		}
		return ""
	})
	cancel()
	if low := <-minRunning; low < 5 {
		t.Fatalf("only %d allocations running at one point during the drain; want at least 5", low)
	}
	node, _ := s.State().NodeByID(nil, drained)
	last := node.Events[len(node.Events)-1]
	if node.SchedulingEligibility != structs.NodeSchedulingIneligible || last.Message != "Node drain complete" || last.Subsystem != "Drain" {
		t.Fatalf("drained node: eligibility %s, last event %+v", node.SchedulingEligibility, last)
	}
}

// TestDrainSystemJobsLast: a system allocation on a draining node stays
// until the service allocation has left, then goes too, and the drain
// completes.
func TestDrainSystemJobsLast(t *testing.T) {
	s := drainGCServer(t, DrainGCConfig{DrainerMinInterval: 20 * time.Millisecond})
	nodes := startClients(t, s, 2, 50*time.Millisecond)
	sys := mock.Job()
	sys.ID, sys.Name, sys.Type = "sys", "sys", structs.JobTypeSystem
	sys.TaskGroups[0].Count = 1
	sys.TaskGroups[0].Migrate = nil
	sys.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 50, MemoryMB: 64, DiskMB: 10}
	web := mock.Job()
	web.ID, web.Name = "web", "web"
	web.TaskGroups[0].Count = 1
	web.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 50, MemoryMB: 64, DiskMB: 10}
	web.Constraints = append(web.Constraints, &structs.Constraint{LTarget: "${node.unique.id}", RTarget: nodes[0].ID, Operand: "="})
	for _, j := range []*structs.Job{sys, web} {
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j}, &structs.JobRegisterResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	dgWait(t, 15*time.Second, func() string {
		if n, _ := runningAllocs(s, nil, sys); n != 2 {
			return fmt.Sprintf("%d system allocations running", n)
		}
		if n, _ := runningAllocs(s, nil, web); n != 1 {
			return "web not running"
		}
		return ""
	})
	// Watch the drained node: a system allocation must not be marked or
	// stopped while the service allocation is still live there.
	ctx, cancel := context.WithCancel(context.Background())
	violation := make(chan string, 1)
	go func() {
		defer close(violation)
		for ctx.Err() == nil {
			ws := memdb.NewWatchSet()
			allocs, _ := s.State().AllocsByNode(ws, nodes[0].ID)
			webLive, sysMoving := false, false
			for _, a := range allocs {
				switch a.JobID {
				case "web":
					webLive = webLive || !a.TerminalStatus()
				case "sys":
					sysMoving = sysMoving || a.DesiredTransition.ShouldMigrate() || a.ServerTerminalStatus()
				}
			}
			if webLive && sysMoving {
				violation <- "system allocation moved while the service one was live"
				return
			}
			_ = ws.WatchCtx(ctx)
		}
	}()
	// web can only run on nodes[0]: its replacement stays blocked, but
	// the old one is stopped first; then the system allocation.
	req := &structs.NodeUpdateDrainRequest{NodeID: nodes[0].ID, DrainStrategy: &structs.DrainStrategy{Deadline: time.Minute}}
	if err := s.RPC("Node.UpdateDrain", req, &structs.NodeUpdateResponse{}); err != nil {
		t.Fatal(err)
	}
	dgWait(t, 15*time.Second, func() string {
		node, _ := s.State().NodeByID(nil, nodes[0].ID)
		if node.DrainStrategy != nil {
			return "drain not complete"
		}
		return ""
	})
	cancel()
	if msg := <-violation; msg != "" {
		t.Fatal(msg)
	}
	for _, a := range mustAllocs(t, s, "sys") {
		if a.NodeID == nodes[0].ID && !a.TerminalStatus() {
			t.Fatalf("system allocation still live on the drained node: %+v", a)
		}
	}
	if n, byNode := runningAllocs(s, nil, sys); n != 1 || byNode[nodes[1].ID] != 1 {
		t.Fatalf("system allocations after the drain: %d %v", n, byNode)
	}
}

// TestGarbageCollection: the periodic collection (short interval and
// thresholds) and the forced one (System.GarbageCollect's path) remove a
// stopped job with its evaluations and allocations, a down node and a
// finished deployment no allocation names, and keep a running job's.
func TestGarbageCollection(t *testing.T) {
	for _, how := range []string{"periodic", "forced"} {
		t.Run(how, func(t *testing.T) {
			cfg := DrainGCConfig{GCInterval: time.Hour}
			if how == "periodic" {
				cfg = DrainGCConfig{GCInterval: 50 * time.Millisecond, EvalGCThreshold: time.Nanosecond,
					JobGCThreshold: time.Nanosecond, NodeGCThreshold: time.Nanosecond, DeploymentGCThreshold: time.Nanosecond}
			}
			s := drainGCServer(t, cfg)
			nodes := startClients(t, s, 1, 10*time.Millisecond)
			down := mock.Node()
			if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: down}, &structs.NodeUpdateResponse{}); err != nil {
				t.Fatal(err)
			}
			var jobs []*structs.Job
			for _, id := range []string{"keep", "gone"} {
				j := mock.Job()
				j.ID, j.Name = id, id
				j.TaskGroups[0].Count = 1
				j.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 50, MemoryMB: 64, DiskMB: 10}
				j.Constraints = append(j.Constraints, &structs.Constraint{LTarget: "${node.unique.id}", RTarget: nodes[0].ID, Operand: "="})
				if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j}, &structs.JobRegisterResponse{}); err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, j)
			}
			dgWait(t, 15*time.Second, func() string {
				for _, j := range jobs {
					if n, _ := runningAllocs(s, nil, j); n != 1 {
						return j.ID + " not running"
					}
				}
				return ""
			})
			if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "gone"}, &structs.JobDeregisterResponse{}); err != nil {
				t.Fatal(err)
			}
			keep, err := s.State().JobByID(nil, structs.DefaultNamespace, "keep")
			if err != nil {
				t.Fatal(err)
			}
			dep := structs.NewDeployment(keep, time.Now())
			dep.Status = structs.DeploymentStatusSuccessful
			if _, _, err := s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: keep, Deployment: dep}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.State().DeploymentByID(nil, dep.ID); how == "forced" && err != nil {
				t.Fatalf("deployment not written: %v", err)
			}
			now := time.Now()
			downReq := &structs.NodeUpdateStatusRequest{NodeID: down.ID, Status: structs.NodeStatusDown, UpdatedAt: now.Unix() - 1}
			if _, _, err := s.raftApply(structs.NodeUpdateStatusRequestType, downReq); err != nil {
				t.Fatal(err)
			}
			st := s.State()
			collected := func() string {
				if _, err := st.JobByID(nil, structs.DefaultNamespace, "gone"); err == nil {
					return "job gone still stored"
				}
				if evals, _ := st.EvalsByJob(nil, structs.DefaultNamespace, "gone"); len(evals) > 0 {
					return fmt.Sprintf("%d evaluations of gone left", len(evals))
				}
				if allocs, _ := st.AllocsByJob(nil, structs.DefaultNamespace, "gone"); len(allocs) > 0 {
					return fmt.Sprintf("%d allocations of gone left", len(allocs))
				}
				if _, err := st.NodeByID(nil, down.ID); err == nil {
					return "down node still registered"
				}
				if _, err := st.DeploymentByID(nil, dep.ID); err == nil {
					return "finished deployment still stored"
				}
				return ""
			}
			if how == "forced" {
				// Wait until the stop is done (evaluations terminal,
				// allocation complete, job dead), then collect once.
				dgWait(t, 15*time.Second, func() string {
					j, err := st.JobByID(nil, structs.DefaultNamespace, "gone")
					if err != nil || j.Status != structs.JobStatusDead {
						return "job gone not dead"
					}
					evals, _ := st.EvalsByJob(nil, structs.DefaultNamespace, "gone")
					for _, e := range evals {
						if !e.TerminalStatus() {
							return "evaluation of gone " + e.Status
						}
					}
					for _, a := range mustAllocs(t, s, "gone") {
						if a.ClientStatus != structs.AllocClientStatusComplete {
							return "allocation of gone not complete"
						}
					}
					return ""
				})
				if _, err := s.garbageCollectNow(); err != nil {
					t.Fatal(err)
				}
				if msg := collected(); msg != "" {
					t.Fatal(msg)
				}
			} else {
				dgWait(t, 15*time.Second, collected)
			}
			if n, _ := runningAllocs(s, nil, jobs[0]); n != 1 {
				t.Fatalf("running job keep lost its allocation")
			}
			if evals, _ := st.EvalsByJob(nil, structs.DefaultNamespace, "keep"); len(evals) == 0 {
				t.Fatalf("running job keep lost its evaluations")
			}
			if _, err := st.NodeByID(nil, nodes[0].ID); err != nil {
				t.Fatalf("live node collected: %v", err)
			}
		})
	}
}

func mustAllocs(t *testing.T, s *Server, jobID string) []*structs.Allocation {
	t.Helper()
	allocs, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	return allocs
}

// TestDrainDeadline: the replacement of the first migrated allocation
// never starts (its node's client does not run anything), so the drain
// waits; at the deadline everything left moves at once and the drain
// completes.
func TestDrainDeadline(t *testing.T) {
	s := drainGCServer(t, DrainGCConfig{DrainerMinInterval: 20 * time.Millisecond})
	nodes := startClients(t, s, 1, 10*time.Millisecond)
	job := mock.Job()
	job.ID, job.Name = "web", "web"
	job.TaskGroups[0].Count = 3
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 50, MemoryMB: 64, DiskMB: 10}
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	dgWait(t, 15*time.Second, func() string {
		if n, _ := runningAllocs(s, nil, job); n != 3 {
			return "job not running"
		}
		return ""
	})
	idle := mock.Node() // registered, but no client runs its allocations
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: idle}, &structs.NodeUpdateResponse{}); err != nil {
		t.Fatal(err)
	}
	const deadline = time.Second
	req := &structs.NodeUpdateDrainRequest{NodeID: nodes[0].ID, DrainStrategy: &structs.DrainStrategy{Deadline: deadline}}
	start := time.Now()
	if err := s.RPC("Node.UpdateDrain", req, &structs.NodeUpdateResponse{}); err != nil {
		t.Fatal(err)
	}
	dgWait(t, 15*time.Second, func() string {
		node, err := s.State().NodeByID(nil, nodes[0].ID)
		if err != nil || node.DrainStrategy != nil {
			return "drain not complete"
		}
		return ""
	})
	if took := time.Since(start); took < deadline || took > deadline+5*time.Second {
		t.Fatalf("drain completed after %v; want just after the %v deadline", took, deadline)
	}
	for _, a := range mustAllocs(t, s, "web") {
		if a.NodeID == nodes[0].ID && !a.TerminalStatus() {
			t.Fatalf("allocation %s still live on the drained node", a.Name)
		}
	}
}
