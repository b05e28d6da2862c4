package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

// fakeLeader serves evaluations from a channel and commits plans straight
// into a state store (all of each plan: conflicts are the applier's tests).
type fakeLeader struct {
	mu          sync.Mutex
	store       *state.StateStore
	index       uint64
	evals       chan *structs.Evaluation
	waitIndex   uint64
	submitErrs  []error // returned by successive SubmitPlan calls before success
	plans       []*structs.Plan
	evalUpdates []*structs.Evaluation
	acked       []string
	nacked      []string
	done        chan string // eval IDs acked or nacked
}

func newFakeLeader(t *testing.T) *fakeLeader {
	s, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	return &fakeLeader{store: s, index: 100, evals: make(chan *structs.Evaluation, 16), done: make(chan string, 16)}
}

func (l *fakeLeader) Dequeue(ctx context.Context, _ []string, timeout time.Duration) (*structs.Evaluation, string, uint64, error) {
	select {
	case e := <-l.evals:
		return e, "tok-" + e.ID, l.waitIndex, nil
	case <-time.After(timeout):
		return nil, "", 0, nil
	case <-ctx.Done():
		return nil, "", 0, ctx.Err()
	}
}

func (l *fakeLeader) Ack(_ context.Context, id, token string) error {
	l.mu.Lock()
	l.acked = append(l.acked, id)
	l.mu.Unlock()
	l.done <- id
	return nil
}

func (l *fakeLeader) Nack(_ context.Context, id, token string) error {
	l.mu.Lock()
	l.nacked = append(l.nacked, id)
	l.mu.Unlock()
	l.done <- id
	return nil
}

func (l *fakeLeader) SubmitPlan(_ context.Context, plan *structs.Plan) (*structs.PlanResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.submitErrs) > 0 {
		err := l.submitErrs[0]
		l.submitErrs = l.submitErrs[1:]
		return nil, err
	}
	if plan.EvalToken != "tok-"+plan.EvalID {
		return nil, structs.ErrTokenMismatch
	}
	l.plans = append(l.plans, plan)
	req := &structs.ApplyPlanResultsRequest{Job: plan.Job, EvalID: plan.EvalID}
	for _, as := range plan.NodeUpdate {
		req.AllocsStopped = append(req.AllocsStopped, as...)
	}
	for _, as := range plan.NodeAllocation {
		req.AllocsUpdated = append(req.AllocsUpdated, as...)
	}
	buf, err := structs.Encode(structs.ApplyPlanResultsRequestType, req)
	if err != nil {
		return nil, err
	}
	var decoded structs.ApplyPlanResultsRequest
	if err := structs.Decode(buf[1:], &decoded); err != nil {
		return nil, err
	}
	l.index++
	if err := l.store.UpsertPlanResults(l.index, &decoded); err != nil {
		return nil, err
	}
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation, AllocIndex: l.index}, nil
}

func (l *fakeLeader) UpdateEvals(_ context.Context, evals []*structs.Evaluation, token string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evalUpdates = append(l.evalUpdates, evals...)
	l.index++
	return l.store.UpsertEvals(l.index, evals)
}

func (l *fakeLeader) ReblockEval(ctx context.Context, eval *structs.Evaluation, token string) error {
	return l.UpdateEvals(ctx, []*structs.Evaluation{eval}, token)
}

// setup stores n nodes and a job, and returns the job's pending eval.
func (l *fakeLeader) setup(t *testing.T, nodes int, job *structs.Job) *structs.Evaluation {
	t.Helper()
	for i := 0; i < nodes; i++ {
		l.index++
		if err := l.store.UpsertNode(l.index, mock.Node(), nil); err != nil {
			t.Fatal(err)
		}
	}
	eval := mock.Eval(job)
	l.index++
	if err := l.store.UpsertJob(l.index, job, eval); err != nil {
		t.Fatal(err)
	}
	return eval
}

func startWorker(t *testing.T, l *fakeLeader, tweak func(*Config)) *Worker {
	t.Helper()
	cfg := Config{
		Leader: l, State: func() *state.StateStore { return l.store },
		Schedulers:     []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem},
		DequeueTimeout: 20 * time.Millisecond, SubmitRetryBase: time.Millisecond, SubmitRetryLimit: 5 * time.Millisecond,
		IndexWaitBase: time.Millisecond, IndexWaitMax: 10 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	w := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { w.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return w
}

func (l *fakeLeader) waitDone(t *testing.T, id string) {
	t.Helper()
	select {
	case got := <-l.done:
		if got != id {
			t.Fatalf("finished eval %s, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("eval %s neither acked nor nacked", id)
	}
}

func TestWorkerPlacesAndAcks(t *testing.T) {
	l := newFakeLeader(t)
	job := mock.Job()
	eval := l.setup(t, 5, job)
	startWorker(t, l, nil)
	l.evals <- eval
	l.waitDone(t, eval.ID)

	if len(l.acked) != 1 || len(l.nacked) != 0 {
		t.Fatalf("acked %v nacked %v", l.acked, l.nacked)
	}
	allocs, err := l.store.AllocsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != job.TaskGroups[0].Count {
		t.Fatalf("placed %d allocs, want %d", len(allocs), job.TaskGroups[0].Count)
	}
	got, err := l.store.EvalByID(nil, eval.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != structs.EvalStatusComplete {
		t.Fatalf("eval status %q, want complete", got.Status)
	}
}

func TestWorkerRetriesSubmitWhileNoLeader(t *testing.T) {
	l := newFakeLeader(t)
	job := mock.Job()
	eval := l.setup(t, 3, job)
	l.submitErrs = []error{structs.ErrNoLeader, structs.ErrPlanQueueDisabled, structs.ErrNoLeader}
	startWorker(t, l, nil)
	l.evals <- eval
	l.waitDone(t, eval.ID)
	if len(l.acked) != 1 || len(l.plans) != 1 {
		t.Fatalf("acked %v, %d plans committed; want the eval acked after one committed plan", l.acked, len(l.plans))
	}
}

func TestWorkerNacksOnNonRetryableError(t *testing.T) {
	l := newFakeLeader(t)
	eval := l.setup(t, 3, mock.Job())
	l.submitErrs = []error{structs.NewError(structs.ErrCodeInvalid, "bad plan")}
	startWorker(t, l, nil)
	l.evals <- eval
	l.waitDone(t, eval.ID)
	if len(l.nacked) != 1 || len(l.plans) != 0 {
		t.Fatalf("nacked %v plans %d; want a nack and no plan", l.nacked, len(l.plans))
	}
}

func TestWorkerNacksUnknownSchedulerType(t *testing.T) {
	l := newFakeLeader(t)
	eval := l.setup(t, 1, mock.Job())
	eval = eval.Copy()
	eval.Type = "no-such-type"
	startWorker(t, l, nil)
	l.evals <- eval
	l.waitDone(t, eval.ID)
	if len(l.nacked) != 1 {
		t.Fatalf("nacked %v, want the eval nacked", l.nacked)
	}
}

func TestWorkerWaitsForIndex(t *testing.T) {
	t.Run("reached later", func(t *testing.T) {
		l := newFakeLeader(t)
		eval := l.setup(t, 2, mock.Job())
		l.waitIndex = l.index + 1 // one entry not yet applied locally
		startWorker(t, l, nil)
		l.evals <- eval
		time.Sleep(30 * time.Millisecond)
		l.mu.Lock()
		l.index++
		if err := l.store.UpsertNode(l.index, mock.Node(), nil); err != nil {
			t.Fatal(err)
		}
		l.mu.Unlock()
		l.waitDone(t, eval.ID)
		if len(l.acked) != 1 {
			t.Fatalf("acked %v", l.acked)
		}
	})
	t.Run("never reached", func(t *testing.T) {
		l := newFakeLeader(t)
		eval := l.setup(t, 2, mock.Job())
		l.waitIndex = l.index + 1000
		startWorker(t, l, func(c *Config) { c.IndexWaitLimit = 50 * time.Millisecond })
		l.evals <- eval
		l.waitDone(t, eval.ID)
		if len(l.nacked) != 1 || len(l.plans) != 0 {
			t.Fatalf("nacked %v plans %d; want a nack without scheduling", l.nacked, len(l.plans))
		}
	})
}

func TestWorkerPauseResume(t *testing.T) {
	l := newFakeLeader(t)
	eval := l.setup(t, 2, mock.Job())
	w := startWorker(t, l, nil)
	w.Pause()
	time.Sleep(50 * time.Millisecond) // let a dequeue already in progress time out
	l.evals <- eval
	select {
	case id := <-l.done:
		t.Fatalf("paused worker processed %s", id)
	case <-time.After(150 * time.Millisecond):
	}
	if !w.Paused() {
		t.Fatal("Paused() = false")
	}
	w.Resume()
	l.waitDone(t, eval.ID)
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{structs.ErrNoLeader, true},
		{structs.ErrNotLeader, true},
		{structs.ErrPlanQueueDisabled, true},
		{structs.DecodeRPCError(structs.ErrNoLeader.Error()), true},
		{structs.ErrTokenMismatch, false},
		{errors.New("no cluster leader"), false}, // text is never matched
	}
	for _, tc := range tests {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestWorkerStampsBlockedEvalsWithSnapshotIndex(t *testing.T) {
	l := newFakeLeader(t)
	eval := l.setup(t, 0, mock.Job()) // no nodes: nothing can be placed
	snapIndex := l.index
	startWorker(t, l, nil)
	l.evals <- eval
	l.waitDone(t, eval.ID)
	var blocked *structs.Evaluation
	for _, e := range l.evalUpdates {
		if e.Status == structs.EvalStatusBlocked {
			blocked = e
		}
	}
	if blocked == nil {
		t.Fatal("no blocked eval created for an unplaceable job")
	}
	if blocked.SnapshotIndex != snapIndex {
		t.Fatalf("blocked eval SnapshotIndex = %d, want %d", blocked.SnapshotIndex, snapIndex)
	}
}
