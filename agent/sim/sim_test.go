package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// batchJob returns a batch job of count mock_driver allocations with the
// given task config.
func batchJob(id string, count int, config map[string]any) *structs.Job {
	return &structs.Job{
		ID: id, Name: id, Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: count,
			Tasks: []*structs.Task{{
				Name: "t", Driver: "mock_driver", Config: config,
				Resources: &structs.Resources{CPU: 10, MemoryMB: 10},
			}},
		}},
	}
}

// waitUntil polls cond every 20 ms until it holds or timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clientStatuses counts a job's allocations by client status on srv.
func clientStatuses(t *testing.T, srv *server.Server, jobID string) map[string]int {
	t.Helper()
	allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatalf("allocs of %s: %v", jobID, err)
	}
	out := map[string]int{}
	for _, a := range allocs {
		out[a.ClientStatus]++
	}
	return out
}

func TestSimAgainstCluster(t *testing.T) {
	const nodes = 40
	// A TTL long enough that a loaded machine (every package's tests
	// under the race detector) does not starve 40 nodes' heartbeats past
	// it; the heartbeat subtest still watches three TTLs.
	const ttl = time.Second
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = ttl
		cfg.HeartbeatGrace = 500 * time.Millisecond
		cfg.RaftNoSync = true
	}), testcluster.WithStableLeader())
	leader := c.WaitForLeader(t, 15*time.Second)
	var addrs []string
	for _, s := range c.Servers() {
		addrs = append(addrs, s.RPCAddr())
	}
	s, err := New(&Config{
		Servers: addrs, Nodes: nodes, IDPrefix: "t", Sessions: 2,
		Classes:        []ClassWeight{{Class: "a", Weight: 3}, {Class: "b", Weight: 1}},
		Attributes:     map[string]string{"rack": "r1"},
		ReportDelay:    30 * time.Millisecond,
		UpdateInterval: 50 * time.Millisecond,
		RetryBase:      20 * time.Millisecond, RetryLimit: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.WaitRegistered(ctx); err != nil {
		t.Fatalf("registering: %v (%s)", err, s.Stats())
	}

	readyNodes := func() (int, string) {
		ns, err := leader.State().Nodes(nil)
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		bad := ""
		for _, n := range ns {
			if n.Status == structs.NodeStatusReady {
				ready++
			} else {
				bad = n.ID + " is " + n.Status
			}
		}
		return ready, bad
	}
	waitUntil(t, "every node ready", 5*time.Second, func() (bool, string) {
		n, bad := readyNodes()
		return n == nodes, fmt.Sprintf("%d ready; %s", n, bad)
	})

	t.Run("registration", func(t *testing.T) {
		n, err := leader.State().NodeByID(nil, NodeID("t", 3))
		if err != nil {
			t.Fatal(err)
		}
		if n.NodeClass != "b" || n.Attributes["rack"] != "r1" || n.Attributes["unique.hostname"] != n.ID ||
			n.Attributes["kernel.name"] != "linux" || n.NodeResources.Cpu.CpuShares != DefaultCPU {
			t.Fatalf("node 3 registered as class %q attrs %v resources %+v", n.NodeClass, n.Attributes, n.NodeResources)
		}
		if n0, _ := leader.State().NodeByID(nil, NodeID("t", 0)); n0 == nil || n0.NodeClass != "a" {
			t.Fatalf("node 0 class: %+v", n0)
		}
	})

	t.Run("heartbeats keep nodes ready past the TTL", func(t *testing.T) {
		before := s.Stats().Heartbeats
		// Three TTLs plus the grace: without heartbeats every node would
		// be marked down by now.
		deadline := time.Now().Add(3*ttl + 500*time.Millisecond)
		for time.Now().Before(deadline) {
			if n, bad := readyNodes(); n != nodes {
				t.Fatalf("only %d of %d nodes ready: %s (%s)", n, nodes, bad, s.Stats())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := s.Stats().Heartbeats - before; got < nodes {
			t.Fatalf("%d heartbeats in three TTLs for %d nodes", got, nodes)
		}
	})

	register := func(t *testing.T, job *structs.Job) {
		t.Helper()
		var resp structs.JobRegisterResponse
		if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
			t.Fatalf("register %s: %v", job.ID, err)
		}
	}

	t.Run("allocations run, finish and stop", func(t *testing.T) {
		register(t, batchJob("long", 60, map[string]any{"run_for": "1h"}))
		register(t, batchJob("short", 10, map[string]any{"run_for": "50ms"}))
		register(t, batchJob("fails", 5, map[string]any{"run_for": "10ms", "exit_code": 3}))
		waitUntil(t, "allocations running and finished", 15*time.Second, func() (bool, string) {
			long, short, fails := clientStatuses(t, leader, "long"), clientStatuses(t, leader, "short"), clientStatuses(t, leader, "fails")
			st := s.Stats()
			ok := long[structs.AllocClientStatusRunning] == 60 && short[structs.AllocClientStatusComplete] == 10 &&
				fails[structs.AllocClientStatusFailed] >= 5 &&
				st.UpdatesSent >= 75 && st.AllocsComplete >= 10 && st.AllocsFailed >= 5 && st.AllocsRunning == 60
			return ok, fmt.Sprintf("long %v short %v fails %v; %s", long, short, fails, st)
		})
		st := s.Stats()
		// Updates are batched across nodes: far fewer RPCs than updates.
		if st.UpdateRPCs*2 > st.UpdatesSent {
			t.Fatalf("%d update RPCs for %d updates: not batched", st.UpdateRPCs, st.UpdatesSent)
		}

		t.Run("the watch's answers read through a codec transport", func(t *testing.T) {
			// server/pool decodes with the codec: a rawReply gets a copy
			// of the body, read as the simulator's own client hands it.
			p := pool.New(pool.Config{})
			defer p.Shutdown()
			var node *structs.Node // one with allocations
			for _, n := range s.nodes {
				n.mu.Lock()
				if len(n.allocs) > 0 && node == nil {
					node = n.node
				}
				n.mu.Unlock()
			}
			if node == nil {
				t.Fatal("no node has allocations")
			}
			req := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID}
			var raw rawReply
			var want structs.NodeClientAllocsResponse
			// The simulator keeps updating allocations: compare two reads
			// of the same state (the same reply index).
			for try := 0; ; try++ {
				raw, want = rawReply{}, structs.NodeClientAllocsResponse{}
				if err := p.RPC(leader.RPCAddr(), "Node.GetClientAllocs", req, &want); err != nil {
					t.Fatal(err)
				}
				if err := p.RPC(leader.RPCAddr(), "Node.GetClientAllocs", req, &raw); err != nil {
					t.Fatal(err)
				}
				// want and again at one index: raw, read between, is that state.
				var again structs.NodeClientAllocsResponse
				if err := p.RPC(leader.RPCAddr(), "Node.GetClientAllocs", req, &again); err != nil {
					t.Fatal(err)
				}
				if again.Index == want.Index || try == 50 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			got, err := readClientAllocs(raw.body)
			if err != nil || got.count != len(want.Allocs) || got.count == 0 {
				t.Fatalf("read %d allocations (%v), want %d", got.count, err, len(want.Allocs))
			}
			var ids []string
			for it := got.iter(); it.next(); {
				if idx, _ := want.Allocs.Get(string(it.id)); idx != it.index {
					t.Fatalf("%s at %d, want %d", it.id, it.index, idx)
				}
				ids = append(ids, string(it.id))
			}
			var rawAllocs rawReply
			if err := p.RPC(leader.RPCAddr(), "Alloc.GetAllocs", &structs.AllocsGetRequest{AllocIDs: ids}, &rawAllocs); err != nil {
				t.Fatal(err)
			}
			allocs, err := readAllocs(rawAllocs.body)
			if err != nil || len(allocs) != len(ids) {
				t.Fatalf("read %d allocations of %d: %v", len(allocs), len(ids), err)
			}
			for _, a := range allocs {
				if string(a.nodeID) != node.ID || !hasIndex(want.Allocs, string(a.id), a.allocModifyIndex) || a.job == nil {
					t.Fatalf("allocation %s of node %s at %d, job %d bytes", a.id, a.nodeID, a.allocModifyIndex, len(a.job))
				}
			}
		})

		var dresp structs.JobDeregisterResponse
		if err := leader.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "long"}, &dresp); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "stopped allocations reported complete", 15*time.Second, func() (bool, string) {
			long := clientStatuses(t, leader, "long")
			return long[structs.AllocClientStatusComplete] == 60, fmt.Sprintf("long %v; %s", long, s.Stats())
		})
	})

	s.Stop()
	if st := s.Stats(); st.AllocsPending != 0 || st.Registered != nodes {
		t.Fatalf("after stop: %s", st)
	}
}

func TestParseClasses(t *testing.T) {
	cases := []struct {
		in      string
		want    []ClassWeight
		wantErr bool
	}{
		{"", nil, false},
		{"a", []ClassWeight{{"a", 1}}, false},
		{"web:3, batch:1", []ClassWeight{{"web", 3}, {"batch", 1}}, false},
		{"a:0", nil, true},
		{"a:x", nil, true},
		{":2", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseClasses(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClassMixAndNodes(t *testing.T) {
	mix := []ClassWeight{{"web", 3}, {"batch", 1}}
	counts := map[string]int{}
	for i := range 400 {
		counts[classOf(mix, i)]++
	}
	if counts["web"] != 300 || counts["batch"] != 100 {
		t.Fatalf("class counts %v", counts)
	}
	cfg := (&Config{Servers: []string{"x"}, Nodes: 2, IDPrefix: "p", Datacenters: []string{"dc1", "dc2"}}).withDefaults()
	a, b := cfg.buildNode(0, time.Unix(0, 0)), cfg.buildNode(1, time.Unix(0, 0))
	if a.ID == b.ID || a.SecretID == b.SecretID || a.Datacenter != "dc1" || b.Datacenter != "dc2" {
		t.Fatalf("nodes %s/%s in %s/%s", a.ID, b.ID, a.Datacenter, b.Datacenter)
	}
	if again := cfg.buildNode(0, time.Unix(0, 0)); again.SecretID != a.SecretID {
		t.Fatal("secret IDs are not deterministic")
	}
	if err := a.Validate(); err != nil {
		t.Fatalf("simulated node does not validate: %v", err)
	}
	if a.ComputedClass == "" || a.ComputedClass != cfg.buildNode(2, time.Unix(0, 0)).ComputedClass {
		t.Fatalf("nodes of one datacenter and class must share a computed class: %q", a.ComputedClass)
	}
}

func TestHeartbeatInterval(t *testing.T) {
	cases := []struct {
		ttl    time.Duration
		jitter float64
		r      float64
		want   time.Duration
	}{
		{10 * time.Second, 0.1, 0, 5 * time.Second},
		{10 * time.Second, 0.1, 0.5, 4500 * time.Millisecond},
		{10 * time.Second, 0, 0.9, 5 * time.Second},
		{time.Millisecond, 0.1, 0, minHeartbeatInterval},
	}
	for _, tc := range cases {
		if got := heartbeatInterval(tc.ttl, tc.jitter, tc.r); got != tc.want {
			t.Errorf("heartbeatInterval(%v, %v, %v) = %v, want %v", tc.ttl, tc.jitter, tc.r, got, tc.want)
		}
	}
}

// nopTransport answers nothing; for tests that never send.
type nopTransport struct{}

func (nopTransport) RPC(addr, method string, args, reply any) error {
	return structs.NewError(structs.ErrCodeUnsupported, "no RPC in this test")
}

func TestDiffWaitsForThePulledAllocations(t *testing.T) {
	s, err := New(&Config{Servers: []string{"x"}, Nodes: 1, Transports: []Transport{nopTransport{}}})
	if err != nil {
		t.Fatal(err)
	}
	n := s.nodes[0]
	n.known["a"] = 10
	// The watch answered at index 30 (say, the node's CreateIndex after
	// it registered again); "b" was placed at 20. The fetch must wait for
	// 20, not 30: Alloc.GetAllocs would block until "b" changes again.
	pull, minIndex, err := n.diff(encodedClientAllocs(t, 30, map[string]uint64{"a": 10, "b": 20, "c": 15}), 0)
	if err != nil || fmt.Sprint(pull) != "[b c]" || minIndex != 20 {
		t.Fatalf("pull %v wait for %d (%v); want [b c] and 20", pull, minIndex, err)
	}
	n.known["b"], n.known["c"] = 20, 15
	n.allocs["c"] = &simAlloc{id: "c", state: allocRunning, group: &groupInfo{}}
	s.counters.allocsRunning.Add(1)
	// An allocation the servers no longer list is forgotten.
	pull, _, err = n.diff(encodedClientAllocs(t, 32, map[string]uint64{"a": 10, "b": 32}), 30)
	if err != nil || fmt.Sprint(pull) != "[b]" || n.allocs["c"] != nil || n.known["c"] != 0 || s.Stats().AllocsRunning != 0 {
		t.Fatalf("pull %v (%v); c still known: %v %v; running %d", pull, err, n.allocs["c"], n.known["c"], s.Stats().AllocsRunning)
	}
	n.known["b"] = 32
	// Entries at or below the index last acted on were in that answer:
	// not even looked up ("d" is not known, against that rule, to show
	// it). Only the answer's newer entries are compared...
	pull, minIndex, err = n.diff(encodedClientAllocs(t, 45, map[string]uint64{"a": 10, "b": 32, "d": 35, "e": 41}), 40)
	if err != nil || fmt.Sprint(pull) != "[e]" || minIndex != 41 {
		t.Fatalf("pull %v wait for %d (%v); want [e] and 41", pull, minIndex, err)
	}
	// ... unless the answer is below that index (the leader's, after a
	// rebuild): then every entry is.
	pull, minIndex, err = n.diff(encodedClientAllocs(t, 38, map[string]uint64{"a": 10, "b": 32, "d": 35}), 40)
	if err != nil || fmt.Sprint(pull) != "[d]" || minIndex != 35 {
		t.Fatalf("pull %v wait for %d (%v); want [d] and 35", pull, minIndex, err)
	}
}

// hasIndex reports whether x lists allocation id at index.
func hasIndex(x structs.AllocIndexes, id string, index uint64) bool {
	got, ok := x.Get(id)
	return ok && got == index
}
