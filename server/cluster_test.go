package server_test

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// registerJob registers a fresh mock job through s and returns it with the
// response.
func registerJob(t *testing.T, s *server.Server, id string) (*structs.Job, structs.JobRegisterResponse) {
	t.Helper()
	job := mock.Job()
	job.ID, job.Name = id, id
	var resp structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
		t.Fatalf("register %s: %v", id, err)
	}
	if resp.Index == 0 || resp.EvalID == "" {
		t.Fatalf("register %s: empty response %+v", id, resp)
	}
	return job, resp
}

// getJob reads a job; stale reads are served locally and wait (blocking on
// minIndex) until the write has reached that server.
func getJob(t *testing.T, s *server.Server, id string, stale bool, minIndex uint64) structs.SingleJobResponse {
	t.Helper()
	args := &structs.JobSpecificRequest{JobID: id}
	args.AllowStale = stale
	args.MinQueryIndex = minIndex
	args.MaxQueryTime = 5 * time.Second
	var resp structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", args, &resp); err != nil {
		t.Fatalf("get job %s on %s: %v", id, s.RPCAddr(), err)
	}
	return resp
}

func follower(t *testing.T, c *testcluster.Cluster) *server.Server {
	t.Helper()
	for _, s := range c.Servers() {
		if !s.IsLeader() {
			return s
		}
	}
	t.Fatal("no follower")
	return nil
}

func raftIDs(t *testing.T, s *server.Server) []string {
	t.Helper()
	var resp structs.RaftConfigurationResponse
	if err := s.RPC("Operator.RaftGetConfiguration", &structs.GenericRequest{}, &resp); err != nil {
		t.Fatalf("raft configuration: %v", err)
	}
	var ids []string
	leaders := 0
	for _, srv := range resp.Servers {
		ids = append(ids, srv.ID)
		if srv.Leader {
			leaders++
		}
		if !srv.Voter {
			t.Fatalf("server %s is not a voter", srv.ID)
		}
	}
	if leaders != 1 {
		t.Fatalf("raft configuration has %d leaders: %+v", leaders, resp.Servers)
	}
	sort.Strings(ids)
	return ids
}

func TestClusterElectsLeader(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 5*time.Second)

	ids := raftIDs(t, leader)
	if len(ids) != 3 {
		t.Fatalf("raft configuration has %d servers, want 3: %v", len(ids), ids)
	}
	for _, s := range c.Servers() {
		if got := len(s.Members()); got != 3 {
			t.Fatalf("%s knows %d members, want 3", s.RPCAddr(), got)
		}
		// A follower learns the configuration from the leader's entries.
		deadline := time.Now().Add(5 * time.Second)
		for {
			var peers []string
			if err := s.RPC("Status.Peers", &structs.GenericRequest{}, &peers); err != nil {
				t.Fatal(err)
			}
			if len(peers) == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: peers %v", s.RPCAddr(), peers)
			}
			time.Sleep(10 * time.Millisecond)
		}
		var l string
		if err := s.RPC("Status.Leader", &structs.GenericRequest{}, &l); err != nil {
			t.Fatal(err)
		}
		if l != leader.RPCAddr() {
			t.Fatalf("%s: leader %q, want %q", s.RPCAddr(), l, leader.RPCAddr())
		}
	}
	if n := c.BootstrapCount(); n < 1 || n > 3 {
		t.Fatalf("bootstrap called %d times", n)
	}
}

func TestClusterForwardsWritesAndReads(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	c.WaitForLeader(t, 5*time.Second)
	f := follower(t, c)

	job, resp := registerJob(t, f, "web")

	// A consistent read at the follower is forwarded to the leader, which
	// has applied the write: it is visible at once, without blocking.
	got := getJob(t, f, job.ID, false, 0)
	if got.Job == nil || got.Job.ID != job.ID {
		t.Fatalf("consistent read at follower: %+v", got.Job)
	}
	if !got.KnownLeader || got.Index < resp.JobModifyIndex {
		t.Fatalf("consistent read meta: %+v (want index >= %d)", got.QueryMeta, resp.JobModifyIndex)
	}

	// Stale reads on every server see the job once replicated.
	for _, s := range c.Servers() {
		got := getJob(t, s, job.ID, true, resp.Index-1)
		if got.Job == nil || got.Job.JobModifyIndex != resp.JobModifyIndex {
			t.Fatalf("stale read on %s: %+v", s.RPCAddr(), got.Job)
		}
		if !got.KnownLeader {
			t.Fatalf("stale read on %s: leader unknown", s.RPCAddr())
		}
	}

	// The evaluation was written in the same entry.
	var ev structs.SingleEvalResponse
	if err := f.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: resp.EvalID}, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Eval == nil || ev.Eval.JobID != job.ID || ev.Eval.TriggeredBy != structs.EvalTriggerJobRegister ||
		ev.Eval.CreateIndex != resp.EvalCreateIndex {
		t.Fatalf("eval: %+v (create index want %d)", ev.Eval, resp.EvalCreateIndex)
	}
}

func TestClusterValidationErrorCrossesForward(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 5*time.Second)
	f := follower(t, c)

	bad := func() *structs.Job {
		job := mock.Job()
		job.Priority = 1000
		job.TaskGroups[0].Name = ""
		return job
	}
	tests := []struct {
		name       string
		srv        *server.Server
		validation bool // served locally: the *ValidationError itself
	}{
		{"at leader", leader, true},
		{"at follower", f, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.JobRegisterResponse
			err := tc.srv.RPC("Job.Register", &structs.JobRegisterRequest{Job: bad()}, &resp)
			if structs.CodeOf(err) != structs.ErrCodeInvalid {
				t.Fatalf("code = %q (%v), want invalid", structs.CodeOf(err), err)
			}
			for _, field := range []string{"Priority", "TaskGroups[0].Name"} {
				if !strings.Contains(err.Error(), field) {
					t.Fatalf("error %q does not name %s", err, field)
				}
			}
			var ve *structs.ValidationError
			if errors.As(err, &ve) != tc.validation {
				t.Fatalf("errors.As ValidationError = %v, want %v (%T)", !tc.validation, tc.validation, err)
			}
		})
	}
}

func TestClusterLeaderFailover(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 5*time.Second)
	f := follower(t, c)

	var ids []string
	for i := 0; i < 10; i++ {
		id := "job-" + string(rune('a'+i))
		via := leader
		if i%2 == 1 {
			via = f
		}
		registerJob(t, via, id)
		ids = append(ids, id)
	}

	old := leader.RPCAddr()
	start := time.Now()
	c.Kill(c.Index(leader))
	newLeader := c.WaitForLeader(t, 5*time.Second)
	if newLeader.RPCAddr() == old {
		t.Fatal("killed leader still leads")
	}
	t.Logf("new leader after %v", time.Since(start))

	for _, s := range c.Servers() {
		for _, id := range ids {
			if got := getJob(t, s, id, false, 0); got.Job == nil {
				t.Fatalf("acknowledged job %s missing via %s", id, s.RPCAddr())
			}
		}
	}
	// Writes work again, at either server.
	for i, s := range c.Servers() {
		registerJob(t, s, "after-"+string(rune('a'+i)))
	}
}

func TestClusterRestartFromDataDirs(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 5*time.Second)
	idsBefore := raftIDs(t, leader)
	bootstraps := c.BootstrapCount()

	var last structs.JobRegisterResponse
	for i := 0; i < 5; i++ {
		_, last = registerJob(t, leader, "persist-"+string(rune('a'+i)))
	}

	for i := 0; i < 3; i++ {
		c.Kill(i)
	}
	for i := 0; i < 3; i++ {
		c.Restart(t, i)
	}
	leader = c.WaitForLeader(t, 10*time.Second)

	if got := raftIDs(t, leader); strings.Join(got, ",") != strings.Join(idsBefore, ",") {
		t.Fatalf("raft configuration after restart %v, before %v", got, idsBefore)
	}
	if n := c.BootstrapCount(); n != bootstraps {
		t.Fatalf("bootstrap calls went from %d to %d across restart", bootstraps, n)
	}
	for _, s := range c.Servers() {
		// Block until the last write is applied here, then read the rest.
		if got := getJob(t, s, "persist-e", true, last.Index-1); got.Job == nil {
			t.Fatalf("last job missing on %s after restart", s.RPCAddr())
		}
		for i := 0; i < 5; i++ {
			id := "persist-" + string(rune('a'+i))
			if got := getJob(t, s, id, true, 0); got.Job == nil {
				t.Fatalf("job %s missing on %s after restart", id, s.RPCAddr())
			}
		}
	}
	registerJob(t, follower(t, c), "after-restart")
}

func TestNoLeaderFailsTyped(t *testing.T) {
	// One server expecting three never bootstraps: there is no leader.
	s, err := server.NewServer(&server.Config{
		DataDir: t.TempDir(), BindAddr: "127.0.0.1", BootstrapExpect: 3,
		RetryInterval: 50 * time.Millisecond, NoLeaderTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()

	calls := []struct {
		name  string
		call  func() error
		local bool // served without a leader
	}{
		{"write", func() error {
			var resp structs.JobRegisterResponse
			return s.RPC("Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}, &resp)
		}, false},
		{"consistent read", func() error {
			var resp structs.SingleJobResponse
			return s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: "x"}, &resp)
		}, false},
		{"stale read", func() error {
			var resp structs.SingleJobResponse
			args := &structs.JobSpecificRequest{JobID: "x"}
			args.AllowStale = true
			return s.RPC("Job.GetJob", args, &resp)
		}, true},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.call()
			elapsed := time.Since(start)
			if tc.local {
				if err != nil {
					t.Fatalf("stale read without leader: %v", err)
				}
				return
			}
			if !errors.Is(err, structs.ErrNoLeader) {
				t.Fatalf("err = %v, want ErrNoLeader", err)
			}
			if elapsed < time.Second || elapsed > 3*time.Second {
				t.Fatalf("failed after %v, want about 1s", elapsed)
			}
		})
	}
}

func TestClusterWipedServerRejoins(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 5*time.Second)
	_, reg := registerJob(t, leader, "before-wipe")
	before := raftIDs(t, leader)

	i := c.Index(follower(t, c))
	oldID := c.Server(i).NodeID()
	wiped := c.Wipe(t, i)
	if wiped.NodeID() == oldID {
		t.Fatal("wiped server kept its node ID")
	}
	bootstraps := c.BootstrapCount()

	// The leader replaces the old entry at that address with the new ID,
	// and the new server receives the data.
	deadline := time.Now().Add(10 * time.Second)
	for {
		leader = c.WaitForLeader(t, 5*time.Second)
		ids := raftIDs(t, leader)
		has := func(id string) bool {
			for _, x := range ids {
				if x == id {
					return true
				}
			}
			return false
		}
		if len(ids) == 3 && has(wiped.NodeID()) && !has(oldID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("raft configuration %v (before %v); want new ID %s instead of %s", ids, before, wiped.NodeID(), oldID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := getJob(t, wiped, "before-wipe", true, reg.Index-1); got.Job == nil {
		t.Fatal("wiped server did not receive the data")
	}
	if n := c.BootstrapCount(); n != bootstraps {
		t.Fatalf("wiped server bootstrapped (%d -> %d)", bootstraps, n)
	}
}

func TestClusterLostQuorumFailsWithNoLeader(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3, testcluster.WithConfig(func(cfg *server.Config) {
		cfg.NoLeaderTimeout = time.Second
	}))
	leader := c.WaitForLeader(t, 5*time.Second)
	survivor := follower(t, c)
	for _, s := range c.Servers() {
		if s != survivor {
			c.Kill(c.Index(s))
		}
	}
	_ = leader

	// The survivor may still believe in the old leader for a heartbeat
	// timeout; either way the write must end in ErrNoLeader.
	start := time.Now()
	var resp structs.JobRegisterResponse
	err := survivor.RPC("Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}, &resp)
	if !errors.Is(err, structs.ErrNoLeader) {
		t.Fatalf("err = %v, want ErrNoLeader", err)
	}
	if took := time.Since(start); took < time.Second || took > 4*time.Second {
		t.Fatalf("failed after %v", took)
	}
	// Stale reads still work.
	if got := getJob(t, survivor, "x", true, 0); got.KnownLeader {
		t.Fatalf("stale read reports a known leader: %+v", got.QueryMeta)
	}
}

// Task states travel and are stored encoded: a client update sent to a
// follower reaches every server's store as sent, and one whose task
// states do not decode is refused by the server the client called, naming
// the field, with nothing written.
func TestClusterClientUpdateTaskStates(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 10*time.Second)
	f := follower(t, c)
	registerNode(t, f, mock.Node())
	job := smallJob("states", 1)
	submitJob(t, f, job)
	var alloc *structs.Allocation
	waitFor(t, 10*time.Second, func() string {
		live := liveAllocs(leader.State(), job.Namespace, job.ID)
		if len(live) != 1 {
			return "not placed yet"
		}
		alloc = live[0]
		return ""
	})

	started := time.Unix(1700000000, 0).UTC()
	states := map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: started,
		Events: []*structs.TaskEvent{{Type: structs.TaskStarted, Time: started.UnixNano(), DisplayMessage: "Task started by client"}}}}
	upd := clientUpdate(t, leader.State(), &structs.Allocation{ID: alloc.ID,
		ClientStatus: structs.AllocClientStatusRunning, TaskStates: structs.NewTaskStates(states)})
	var resp structs.GenericResponse
	if err := f.RPC("Node.UpdateAlloc", upd, &resp); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers() {
		waitFor(t, 10*time.Second, func() string {
			got, err := s.State().AllocByID(nil, alloc.ID)
			if err != nil || got.ModifyIndex < resp.Index {
				return fmt.Sprintf("%s: update at %d not applied (%v)", s.RPCAddr(), resp.Index, err)
			}
			m, err := got.TaskStates.Map()
			if err != nil || !reflect.DeepEqual(m, states) {
				return fmt.Sprintf("%s: task states %#v, %v", s.RPCAddr(), m, err)
			}
			return ""
		})
	}

	// A map whose values are not task states, as a broken client could
	// send: the msgpack is a map, so it decodes as TaskStates.
	var buf []byte
	if err := codec.NewEncoderBytes(&buf, structs.MsgpackHandle).Encode(map[string]any{"ID": alloc.ID,
		"ClientStatus": structs.AllocClientStatusFailed, "TaskStates": map[string]any{"web": "running"}}); err != nil {
		t.Fatal(err)
	}
	var bad structs.Allocation
	if err := structs.Decode(buf, &bad); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*server.Server{f, leader} {
		err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{&bad}}, &structs.GenericResponse{})
		var verr *structs.ValidationError
		if !errors.As(err, &verr) || structs.CodeOf(err) != structs.ErrCodeInvalid || !strings.Contains(err.Error(), "Alloc[0].TaskStates") {
			t.Fatalf("%s: bad task states: %v, want a validation error naming Alloc[0].TaskStates", s.RPCAddr(), err)
		}
	}
	got, err := leader.State().AllocByID(nil, alloc.ID)
	if err != nil || got.ClientStatus != structs.AllocClientStatusRunning || got.ModifyIndex != resp.Index {
		t.Fatalf("after refused updates: %+v, %v", got, err)
	}
}
