package client

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// cutTransport cuts a client off from the servers on demand: while cut,
// calls fail unsent, and answers to calls made before the cut are
// dropped, as if the network between them were down.
type cutTransport struct {
	next Transport
	cut  atomic.Bool
}

func (c *cutTransport) RPC(addr, method string, args, reply any) error {
	if c.cut.Load() {
		return &pool.NotSentError{Addr: addr, Err: errors.New("cut off from the servers (test)")}
	}
	err := c.next.RPC(addr, method, args, reply)
	if c.cut.Load() {
		return &pool.NotSentError{Addr: addr, Err: errors.New("cut off from the servers (test)")}
	}
	return err
}

// procsWithArgs returns the PIDs of the processes whose command line is
// exactly args.
func procsWithArgs(args ...string) []int {
	want := []byte{}
	for _, a := range args {
		want = append(append(want, a...), 0)
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Equal(cmd, want) {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
				continue // a zombie runs nothing
			}
			out = append(out, pid)
		}
	}
	return out
}

// TestStopAfterClientDisconnectFenced runs a count=1 service job with
// stop_after_client_disconnect as a real process (raw_exec) on client A,
// cuts A off from the servers, and samples /proc every 100 ms: A stops
// the process itself within the timeout of its last successful heartbeat,
// the servers place the replacement on client B only after the fence, and
// never do two processes of the job run at once. Once A is back, the job
// has one running allocation and one process.
func TestStopAfterClientDisconnectFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and real processes")
	}
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("needs /bin/sleep")
	}
	cluster := testcluster.NewTestCluster(t, 1, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.HeartbeatMinTTL = time.Second
		cfg.HeartbeatGrace = time.Second
	}))
	leader := cluster.WaitForLeader(t, 10*time.Second)
	startClient := func(name string, tr Transport) *Client {
		c, err := New(&Config{
			DataDir: t.TempDir(), Servers: []string{leader.RPCAddr()}, NodeName: name, RawExecEnabled: true,
			NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: time.Second,
			RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond, Transport: tr,
		})
		if err != nil {
			t.Fatal(err)
		}
		cleanupKill(t, c)
		waitFor(t, name+" ready", 10*time.Second, func() bool {
			n, err := leader.State().NodeByID(nil, c.NodeID())
			return err == nil && n.Status == structs.NodeStatusReady
		})
		return c
	}
	p := pool.New(pool.Config{})
	t.Cleanup(func() { p.Shutdown() })
	cutA := &cutTransport{next: p}
	a := startClient("a", cutA)

	marker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
	stop := 2 * time.Second
	job := &structs.Job{ID: "fenced", Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, StopAfterClientDisconnect: &stop,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{marker}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}}}}}
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	var pidA int
	waitFor(t, "the process on a", 15*time.Second, func() bool {
		p := procsWithArgs("/bin/sleep", marker)
		if len(p) == 1 {
			pidA = p[0]
		}
		return len(p) == 1
	})
	origAllocs, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
	if len(origAllocs) != 1 || origAllocs[0].NodeID != a.NodeID() {
		t.Fatalf("allocations %v, want one on a", origAllocs)
	}
	orig := origAllocs[0]
	b := startClient("b", nil)

	// Sample the processes every 100 ms from now on.
	var (
		mu       sync.Mutex
		maxProcs int
		twoAt    []time.Duration
	)
	start := time.Now()
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			n := len(procsWithArgs("/bin/sleep", marker))
			mu.Lock()
			maxProcs = max(maxProcs, n)
			if n > 1 {
				twoAt = append(twoAt, time.Since(start))
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		select {
		case <-done:
		default:
			close(done)
		}
		<-sampled
	}()

	cutA.cut.Store(true)
	cutAt := time.Now()
	waitFor(t, "a to stop its process", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pidA)))
		return err != nil || len(procsWithArgs("/bin/sleep", marker)) == 0
	})
	stoppedAfter := time.Since(cutAt)
	// The deadline counts from the last successful heartbeat, sent at most
	// a heartbeat interval (about half the 1s TTL) before the cut.
	if stoppedAfter > stop+time.Second {
		t.Errorf("a stopped its process %v after the cut, want within %v", stoppedAfter, stop+time.Second)
	}
	waitFor(t, "the replacement on b", 30*time.Second, func() bool {
		allocs, err := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
		if err != nil {
			return false
		}
		for _, x := range allocs {
			if x.NodeID == b.NodeID() && x.ClientStatus == structs.AllocClientStatusRunning {
				return len(procsWithArgs("/bin/sleep", marker)) == 1
			}
		}
		return false
	})
	replacedAfter := time.Since(cutAt)
	t.Logf("a stopped its process %v after the cut; the replacement ran on b %v after it", stoppedAfter, replacedAfter)

	// a comes back: it reports its allocation finished and runs nothing.
	cutA.cut.Store(false)
	waitFor(t, "a's allocation finished", 15*time.Second, func() bool {
		x, err := leader.State().AllocByID(nil, orig.ID)
		return err == nil && x.ClientTerminalStatus() && x.ServerTerminalStatus()
	})
	time.Sleep(time.Second)
	close(done)
	<-sampled
	live := 0
	allocs, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
	for _, x := range allocs {
		if !x.TerminalStatus() {
			live++
		}
	}
	if n := len(procsWithArgs("/bin/sleep", marker)); n != 1 || live != 1 {
		t.Errorf("after a came back: %d processes, %d live allocations; want 1 and 1", n, live)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxProcs > 1 {
		t.Errorf("two processes of the count=1 job ran at once, at %v after sampling began", twoAt)
	}
}

// TestDisconnectReconnectPolicies runs a count=1 service job with a
// disconnect window (lost_after) as a real process on client A, cuts A
// off: the servers hold A's allocation as unknown (not lost) and run a
// replacement on client B, while A keeps its process. When A comes back
// within the window, the group's reconcile policy keeps one of the two
// and the other process is stopped.
func TestDisconnectReconnectPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and real processes")
	}
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("needs /bin/sleep")
	}
	for _, tc := range []struct {
		policy       string
		keepOriginal bool
	}{
		{structs.ReconcileOptionKeepOriginal, true},
		{structs.ReconcileOptionKeepReplacement, false},
		{structs.ReconcileOptionLongestRunning, true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			cluster := testcluster.NewTestCluster(t, 1, testcluster.WithConfig(func(cfg *server.Config) {
				cfg.HeartbeatMinTTL = time.Second
				cfg.HeartbeatGrace = time.Second
			}))
			leader := cluster.WaitForLeader(t, 10*time.Second)
			startClient := func(name string, tr Transport) *Client {
				c, err := New(&Config{
					DataDir: t.TempDir(), Servers: []string{leader.RPCAddr()}, NodeName: name, RawExecEnabled: true,
					NetworkAddr: "127.0.0.1", UpdateInterval: 50 * time.Millisecond, MaxQueryTime: time.Second,
					RetryBase: 20 * time.Millisecond, RetryLimit: 200 * time.Millisecond, Transport: tr,
				})
				if err != nil {
					t.Fatal(err)
				}
				cleanupKill(t, c)
				waitFor(t, name+" ready", 10*time.Second, func() bool {
					n, err := leader.State().NodeByID(nil, c.NodeID())
					return err == nil && n.Status == structs.NodeStatusReady
				})
				return c
			}
			p := pool.New(pool.Config{})
			t.Cleanup(func() { p.Shutdown() })
			cutA := &cutTransport{next: p}
			a := startClient("a", cutA)

			marker := strconv.Itoa(1_000_000 + rand.IntN(8_000_000))
			job := &structs.Job{ID: "reconnect", Type: structs.JobTypeService, Datacenters: []string{"dc1"},
				TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
					Disconnect: &structs.DisconnectStrategy{LostAfter: 30 * time.Second, Reconcile: tc.policy},
					Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: time.Second,
						Config:    map[string]any{"command": "/bin/sleep", "args": []any{marker}},
						Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}}}}}
			if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
				t.Fatal(err)
			}
			var pidA int
			waitFor(t, "the process on a", 15*time.Second, func() bool {
				p := procsWithArgs("/bin/sleep", marker)
				if len(p) == 1 {
					pidA = p[0]
				}
				return len(p) == 1
			})
			allocs, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
			if len(allocs) != 1 || allocs[0].NodeID != a.NodeID() {
				t.Fatalf("allocations %v, want one on a", allocs)
			}
			orig := allocs[0]
			b := startClient("b", nil)

			cutA.cut.Store(true)
			var repl *structs.Allocation
			waitFor(t, "a's allocation unknown and its replacement running on b", 20*time.Second, func() bool {
				o, err := leader.State().AllocByID(nil, orig.ID)
				if err != nil || o.ClientStatus != structs.AllocClientStatusUnknown {
					return false
				}
				all, _ := leader.State().AllocsByJob(nil, structs.DefaultNamespace, job.ID)
				for _, x := range all {
					if x.NodeID == b.NodeID() && x.ClientStatus == structs.AllocClientStatusRunning && x.PreviousAllocation == orig.ID {
						repl = x
						return len(procsWithArgs("/bin/sleep", marker)) == 2
					}
				}
				return false
			})
			if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pidA))); err != nil {
				t.Fatalf("a's process is gone while a is cut off (no client-side stop was asked for): %v", err)
			}

			cutA.cut.Store(false)
			loser, winner := repl.ID, orig.ID
			if !tc.keepOriginal {
				loser, winner = orig.ID, repl.ID
			}
			waitFor(t, "one copy kept by "+tc.policy, 20*time.Second, func() bool {
				l, err1 := leader.State().AllocByID(nil, loser)
				w, err2 := leader.State().AllocByID(nil, winner)
				return err1 == nil && err2 == nil && l.ServerTerminalStatus() && l.ClientTerminalStatus() &&
					!w.TerminalStatus() && w.ClientStatus == structs.AllocClientStatusRunning &&
					len(procsWithArgs("/bin/sleep", marker)) == 1
			})
			_, errA := os.Stat(filepath.Join("/proc", strconv.Itoa(pidA)))
			if tc.keepOriginal != (errA == nil) {
				t.Fatalf("a's process alive = %v, want %v", errA == nil, tc.keepOriginal)
			}
			if l, _ := leader.State().AllocByID(nil, loser); l.DesiredDescription != "alloc not needed due to disconnected client reconnect" {
				t.Fatalf("the stopped copy says %q", l.DesiredDescription)
			}
		})
	}
}
