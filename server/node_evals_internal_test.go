package server

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// The pacer gives a job at most one node-event evaluation per window, the
// window doubling up to four first windows while events keep coming, and
// tells an event which write of a new evaluation of its jobs is in flight.
func TestNodeEvalPacer(t *testing.T) {
	p := newNodeEvalPacer(time.Second)
	t0 := time.Unix(1000, 0)
	web := structs.NamespacedID{Namespace: "default", ID: "web"}
	steps := []struct {
		at   time.Duration
		want time.Duration // -1: due at once
	}{
		{0, -1},
		{100 * time.Millisecond, 2 * time.Second},  // within the window: two windows after the first
		{200 * time.Millisecond, 2 * time.Second},  // the previous not yet due: with it, never further
		{2500 * time.Millisecond, 6 * time.Second}, // events keep coming: four windows after it
		{7 * time.Second, 10 * time.Second},        // at most four windows
		{15 * time.Second, -1},                     // quiet for a window: at once again
		{15500 * time.Millisecond, 17 * time.Second},
	}
	for _, s := range steps {
		p.mu.Lock()
		got := p.dueLocked(web, t0.Add(s.at))
		p.mu.Unlock()
		want := time.Time{}
		if s.want >= 0 {
			want = t0.Add(s.want)
		}
		if !got.Equal(want) {
			t.Errorf("due at +%v = %v, want %v", s.at, got, want)
		}
	}
	p.reset()
	p.mu.Lock()
	if got := p.dueLocked(web, t0.Add(15600*time.Millisecond)); !got.IsZero() {
		t.Errorf("after reset: due %v, want at once", got)
	}
	p.mu.Unlock()

	job := &structs.Job{Namespace: "default", ID: "web"}
	other := &structs.Job{Namespace: "default", ID: "other"}
	if p.inFlight([]*structs.Job{job}) != nil {
		t.Fatal("a write in flight before any")
	}
	ch := make(chan struct{})
	p.mu.Lock()
	p.writing[web] = ch
	p.mu.Unlock()
	if p.inFlight([]*structs.Job{other, job}) != ch || p.inFlight([]*structs.Job{other}) != nil {
		t.Fatal("inFlight does not find the job's write")
	}
	p.finish(ch)
	select {
	case <-ch:
	default:
		t.Fatal("finish left the channel open")
	}
	if p.inFlight([]*structs.Job{job}) != nil {
		t.Fatal("a finished write still in flight")
	}
}

// A delivery's wait index covers the node events its evaluation absorbed
// (a node registered after the evaluation was written, with no evaluation
// of its own) and the index at which the leader restored its pending
// evaluations.
func TestDequeueWaitIndexCoversAbsorbedEvents(t *testing.T) {
	s, err := NewServer(&Config{
		Name: "dev", BindAddr: "127.0.0.1", BootstrapExpect: 1,
		RaftTimeoutScale: 0.25, RetryInterval: 50 * time.Millisecond, NumSchedulers: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	deadline := time.Now().Add(10 * time.Second)
	for !s.leaderEstablished.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	register := func(id string) *structs.Job {
		job := mock.Job()
		job.ID, job.Name, job.Type = id, id, structs.JobTypeSystem
		job.TaskGroups[0].Count, job.TaskGroups[0].ReschedulePolicy, job.TaskGroups[0].Migrate = 1, nil, nil
		var resp structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
			t.Fatal(err)
		}
		return job
	}
	register("sys")
	var reply structs.NodeUpdateResponse
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: mock.Node()}, &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.EvalIDs) != 0 {
		t.Fatalf("the join wrote evaluations %v, want it absorbed by the pending registration evaluation", reply.EvalIDs)
	}
	ctx := context.Background()
	eval, _, index, err := s.dequeueEval(ctx, []string{structs.JobTypeSystem}, true)
	if err != nil || eval == nil {
		t.Fatalf("dequeue: %v, %v", eval, err)
	}
	if eval.CreateIndex >= reply.NodeModifyIndex || index < reply.NodeModifyIndex {
		t.Fatalf("evaluation written at %d, node at %d: wait index %d, want at least the node's", eval.CreateIndex, reply.NodeModifyIndex, index)
	}

	floor := reply.NodeModifyIndex + 1000
	s.evalFloor.Store(floor)
	register("sys2")
	eval, _, index, err = s.dequeueEval(ctx, []string{structs.JobTypeSystem}, true)
	if err != nil || eval == nil {
		t.Fatalf("dequeue: %v, %v", eval, err)
	}
	if index != floor {
		t.Fatalf("wait index %d, want the restore floor %d", index, floor)
	}
}
