package server_test

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// periodicChildren returns the launch times (Unix seconds) of the
// children of id in s's state, sorted.
func periodicChildren(t *testing.T, s *server.Server, id string) []int64 {
	t.Helper()
	jobs, err := s.State().JobsByIDPrefix(nil, structs.DefaultNamespace, id+structs.PeriodicLaunchSuffix)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, j := range jobs {
		if j.ParentID != id || j.Periodic != nil {
			t.Fatalf("child %s: ParentID %q, Periodic %v", j.ID, j.ParentID, j.Periodic)
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(j.ID, id+structs.PeriodicLaunchSuffix), 10, 64)
		if err != nil {
			t.Fatalf("child ID %q: %v", j.ID, err)
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func waitChildren(t *testing.T, s *server.Server, id string, n int, timeout time.Duration) []int64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := periodicChildren(t, s, id)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d children of %s after %s, want %d: %v", len(got), id, timeout, n, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterPeriodicAcrossLeaderChange: a periodic job every 2 s on three
// servers. The leader is transferred between two launches, then killed;
// every run due while a leader ran is launched exactly once, a run missed
// while none did is launched at most once (the latest), and the launch
// record follows the children.
func TestClusterPeriodicAcrossLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-server cluster for about 15 s")
	}
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) { cfg.NumSchedulers = 0 }))
	leader := c.WaitForLeader(t, 10*time.Second)

	job := mock.BatchJob()
	job.ID, job.Name = "tick", "tick"
	job.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "*/2 * * * * * *"}
	var resp structs.JobRegisterResponse
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.EvalID != "" {
		t.Fatalf("registering a periodic job created evaluation %s", resp.EvalID)
	}
	waitChildren(t, leader, job.ID, 2, 10*time.Second)

	// A leadership transfer right after a launch: the next run is due in
	// about 2 s and the new leader is up well before.
	before := periodicChildren(t, leader, job.ID)
	waitChildren(t, leader, job.ID, len(before)+1, 5*time.Second)
	// Under load an election may already have moved leadership: transfer
	// from whoever leads now.
	for attempt := 0; ; attempt++ {
		err := leader.Raft().LeadershipTransfer().Error()
		if err == nil {
			break
		}
		if !errors.Is(err, raft.ErrNotLeader) || attempt == 5 {
			t.Fatal(err)
		}
		leader = c.WaitForLeader(t, 10*time.Second)
	}
	leader = waitNewLeader(t, c, leader, 10*time.Second)
	waitChildren(t, leader, job.ID, len(before)+3, 10*time.Second)
	for _, s := range c.Servers() {
		got := waitChildren(t, s, job.ID, len(before)+3, 5*time.Second)
		checkEvery2s(t, got[:len(before)+3], "across a transfer")
	}

	// Kill the leader: runs due while no leader ran are launched at most
	// once; those after the new leader are all launched.
	killed := c.Index(leader)
	beforeKill := periodicChildren(t, leader, job.ID)
	c.Kill(killed)
	leader = c.WaitForLeader(t, 15*time.Second)
	got := waitChildren(t, leader, job.ID, len(beforeKill)+3, 15*time.Second)
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] || got[i]%2 != 0 {
			t.Fatalf("children %v: a run doubled or off schedule", got)
		}
	}
	// From the first launch after the kill on, runs are consecutive.
	tail := got[len(beforeKill)+1:]
	checkEvery2s(t, tail, "after the new leader")
	checkEvery2s(t, got[:len(beforeKill)], "before the kill")

	t.Logf("launch times: %v (killed the leader after %d)", got, len(beforeKill))
	// The launch record is the latest child, on every live server.
	for _, s := range c.Servers() {
		if s == nil {
			continue
		}
		children := waitChildren(t, s, job.ID, len(got), 5*time.Second)
		l, err := s.State().PeriodicLaunchByID(nil, structs.DefaultNamespace, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last := children[len(children)-1]; l.Launch.Unix() < last {
			t.Fatalf("launch record %v behind the latest child %d", l.Launch, last)
		}
	}
}

// checkEvery2s fails unless the launch times are consecutive runs of a
// 2 s schedule: each launched once, none skipped.
func checkEvery2s(t *testing.T, times []int64, what string) {
	t.Helper()
	for i := 1; i < len(times); i++ {
		if times[i]-times[i-1] != 2 {
			t.Fatalf("%s: launches %v are not every run of the schedule exactly once", what, times)
		}
	}
}

func waitNewLeader(t *testing.T, c *testcluster.Cluster, old *server.Server, timeout time.Duration) *server.Server {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if l := c.WaitForLeader(t, timeout); l != old {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatal("leadership did not move")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
