package server_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// pipelineCluster starts n servers with the given workers each and
// heartbeat TTLs long enough that unattended nodes stay up.
func pipelineCluster(t testing.TB, n, workers int, opts ...testcluster.Option) *testcluster.Cluster {
	t.Helper()
	base := testcluster.WithConfig(func(cfg *server.Config) {
		cfg.NumSchedulers = workers
		cfg.HeartbeatMinTTL = 10 * time.Minute
	})
	c := testcluster.NewTestCluster(t, n, append([]testcluster.Option{base}, opts...)...)
	c.WaitForLeader(t, 10*time.Second)
	return c
}

// retryWrite repeats a write while it fails with an error that leaves it
// safe or harmless to repeat (no leader, leadership changing, a server
// going away mid-request).
func retryWrite(t testing.TB, c *testcluster.Cluster, fn func(s *server.Server) error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		servers := c.Servers()
		s := servers[rand.IntN(len(servers))]
		err := fn(s)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("write still failing after 30s: %v", err)
			return
		}
		var se *structs.Error
		if errors.As(err, &se) && se.Code != structs.ErrCodeNoLeader && se.Code != structs.ErrCodeNotLeader &&
			se.Code != structs.ErrCodeInternal && se.Code != structs.ErrCodeShutdown && se.Code != structs.ErrCodeOutcomeUnknown {
			t.Errorf("write failed: %v", err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterSchedulesConcurrently: 3 servers x 4 workers, 50 nodes, 200
// jobs x 10 submitted concurrently through every server. Every job is
// placed in full, every evaluation completes, no node is overcommitted and
// no allocation is duplicated. With the leader killed mid-run, the same
// holds on the survivors: no evaluation is lost.
func TestClusterSchedulesConcurrently(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill_leader=%v", kill), func(t *testing.T) {
			runConcurrentScheduling(t, kill)
		})
	}
}

func runConcurrentScheduling(t *testing.T, killLeader bool) {
	const (
		numNodes = 50
		numJobs  = 200
		count    = 10
	)
	c := pipelineCluster(t, 3, 4)

	var wg sync.WaitGroup
	nodes := make(chan *structs.Node, numNodes)
	for i := 0; i < numNodes; i++ {
		nodes <- mock.Node()
	}
	close(nodes)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range nodes {
				retryWrite(t, c, func(s *server.Server) error {
					var resp structs.NodeUpdateResponse
					return s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &resp)
				})
			}
		}()
	}
	wg.Wait()

	jobs := make([]*structs.Job, numJobs)
	for i := range jobs {
		jobs[i] = smallJob(fmt.Sprintf("job-%03d", i), count)
	}
	var submitted atomic.Int64
	next := make(chan *structs.Job, numJobs)
	for _, j := range jobs {
		next <- j
	}
	close(next)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				retryWrite(t, c, func(s *server.Server) error {
					var resp structs.JobRegisterResponse
					return s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j.Copy()}, &resp)
				})
				submitted.Add(1)
			}
		}()
	}
	if killLeader {
		// Kill the leader once some evaluations are done and many are not.
		leader := c.WaitForLeader(t, 10*time.Second)
		var done, total int
		waitFor(t, 30*time.Second, func() string {
			evals, _ := leader.State().Evals(nil)
			done, total = 0, len(evals)
			for _, e := range evals {
				if e.TerminalStatus() {
					done++
				}
			}
			if done < numJobs/5 {
				return fmt.Sprintf("%d evaluations done", done)
			}
			return ""
		})
		t.Logf("killing the leader with %d of %d evaluations done (%d jobs submitted)", done, total, submitted.Load())
		c.Kill(c.Index(leader))
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	leader := c.WaitForLeader(t, 10*time.Second)
	st := leader.State()
	waitFor(t, 60*time.Second, func() string { return jobsPlaced(st, jobs) })
	checkPlacements(t, st)
	evals, err := st.Evals(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evals {
		if e.Status != structs.EvalStatusComplete && e.Status != structs.EvalStatusCancelled {
			t.Errorf("eval %s of job %s (%s) ended %s: %s", e.ID, e.JobID, e.TriggeredBy, e.Status, e.StatusDescription)
		}
	}
	// Every server converges on the same allocations.
	want, _ := st.LatestIndex()
	for _, s := range c.Servers() {
		waitFor(t, 10*time.Second, func() string {
			if got, _ := s.State().LatestIndex(); got < want {
				return fmt.Sprintf("%s at index %d, want %d", s.RPCAddr(), got, want)
			}
			return ""
		})
		checkPlacements(t, s.State())
	}
}
