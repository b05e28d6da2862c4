package server_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// waitFor polls cond every 20 ms until it returns "" (done) or timeout
// passes; then it fails with cond's last message.
func waitFor(t testing.TB, timeout time.Duration, cond func() string) {
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

// schedServer starts a single server (bootstrapping alone) with the given
// number of workers (-1 for none; 0 means the default, one per CPU) and
// options, and waits until it leads.
func schedServer(t testing.TB, workers int, opts ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := &server.Config{
		Name: "dev", BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond,
		NumSchedulers: workers, LeaderWorkerFraction: 1,
	}
	for _, o := range opts {
		o(cfg)
	}
	s, err := server.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	waitFor(t, 10*time.Second, func() string {
		var resp structs.JobListResponse
		if !s.IsLeader() {
			return "not leader"
		}
		if err := s.RPC("Job.List", &structs.JobListRequest{}, &resp); err != nil && !errors.Is(err, structs.ErrPermissionDenied) {
			return err.Error()
		}
		return ""
	})
	return s
}

// smallJob is a service job of count instances that fit many to a mock node.
func smallJob(id string, count int) *structs.Job {
	job := mock.Job()
	job.ID, job.Name = id, id
	job.TaskGroups[0].Count = count
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 50, MemoryMB: 64, DiskMB: 10}
	return job
}

// registerNode registers node through s and returns the reply.
func registerNode(t testing.TB, s *server.Server, node *structs.Node) structs.NodeUpdateResponse {
	t.Helper()
	var resp structs.NodeUpdateResponse
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
		t.Fatalf("register node %s: %v", node.ID, err)
	}
	return resp
}

// submitJob registers job through s.
func submitJob(t testing.TB, s *server.Server, job *structs.Job) structs.JobRegisterResponse {
	t.Helper()
	var resp structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
		t.Fatalf("register job %s: %v", job.ID, err)
	}
	return resp
}

// liveAllocs returns a job's allocations the servers want running.
func liveAllocs(st *state.StateStore, ns, jobID string) []*structs.Allocation {
	allocs, _ := st.AllocsByJob(nil, ns, jobID)
	var out []*structs.Allocation
	for _, a := range allocs {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// jobsPlaced returns "" once every job has exactly its count of live
// allocations and every evaluation in st is terminal.
func jobsPlaced(st *state.StateStore, jobs []*structs.Job) string {
	for _, j := range jobs {
		want := j.TaskGroups[0].Count
		if got := len(liveAllocs(st, j.Namespace, j.ID)); got != want {
			return fmt.Sprintf("job %s has %d live allocations, want %d", j.ID, got, want)
		}
	}
	evals, _ := st.Evals(nil)
	for _, e := range evals {
		if !e.TerminalStatus() {
			return fmt.Sprintf("eval %s (job %s, %s) is %s", e.ID, e.JobID, e.TriggeredBy, e.Status)
		}
	}
	return ""
}

// checkPlacements asserts the cluster invariants: no node overcommitted,
// allocations only on existing nodes, and no duplicate allocation (names
// unique per job and group among live allocations; per node for system
// jobs).
func checkPlacements(t testing.TB, st *state.StateStore) {
	t.Helper()
	nodes, err := st.Nodes(nil)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*structs.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	allocs, err := st.Allocs(nil)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]*structs.ComparableResources{}
	names := map[string]string{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		if byID[a.NodeID] == nil {
			t.Errorf("alloc %s on unknown node %s", a.ID, a.NodeID)
			continue
		}
		key := a.Namespace + "/" + a.JobID + "/" + a.TaskGroup + "/" + a.Name
		if a.Job != nil && a.Job.Type == structs.JobTypeSystem {
			key += "@" + a.NodeID // a system job's instances share names, one per node
		}
		if other, dup := names[key]; dup {
			t.Errorf("duplicate allocation %s: %s and %s", a.Name, other, a.ID)
		}
		names[key] = a.ID
		u := used[a.NodeID]
		if u == nil {
			u = &structs.ComparableResources{}
			used[a.NodeID] = u
		}
		u.Add(a.AllocatedResources.Comparable())
	}
	var over []string
	for id, u := range used {
		n := byID[id]
		capacity := structs.ComparableResources{
			CPU:      n.NodeResources.Cpu.CpuShares - n.ReservedResources.Cpu.CpuShares,
			MemoryMB: n.NodeResources.Memory.MemoryMB - n.ReservedResources.Memory.MemoryMB,
			DiskMB:   n.NodeResources.Disk.DiskMB - n.ReservedResources.Disk.DiskMB,
		}
		if ok, dim := capacity.Superset(*u); !ok {
			over = append(over, fmt.Sprintf("%s (%s: used %+v of %+v)", id, dim, *u, capacity))
		}
	}
	sort.Strings(over)
	for _, o := range over {
		t.Errorf("node overcommitted: %s", o)
	}
}

// jobEvals returns a job's evaluations.
func jobEvals(t testing.TB, st *state.StateStore, job *structs.Job) []*structs.Evaluation {
	t.Helper()
	evals, err := st.EvalsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	return evals
}
