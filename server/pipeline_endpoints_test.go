package server_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/pool"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// remote calls s over a real RPC connection, so errors come back decoded.
func remote(t *testing.T, s *server.Server) func(method string, args, reply any) error {
	t.Helper()
	p := pool.New(pool.Config{})
	t.Cleanup(func() { p.Shutdown() })
	return func(method string, args, reply any) error { return p.RPC(s.RPCAddr(), method, args, reply) }
}

func dequeue(t *testing.T, call func(string, any, any) error, timeout time.Duration) structs.EvalDequeueResponse {
	t.Helper()
	var resp structs.EvalDequeueResponse
	args := &structs.EvalDequeueRequest{Schedulers: []string{structs.JobTypeService}, Timeout: timeout}
	if err := call("Eval.Dequeue", args, &resp); err != nil {
		t.Fatalf("dequeue: %v", err)
	}
	return resp
}

// TestEvalWorkerEndpoints plays the worker over RPC against a server with
// no workers of its own: dequeue, token checks (typed across the wire),
// plan submission, eval update and ack.
func TestEvalWorkerEndpoints(t *testing.T) {
	s := schedServer(t, -1)
	call := remote(t, s)
	node := mock.Node()
	registerNode(t, s, node)

	if resp := dequeue(t, call, 50*time.Millisecond); resp.Eval != nil {
		t.Fatalf("dequeue from an empty broker returned %s", resp.Eval.ID)
	}
	job := smallJob("web", 1)
	reg := submitJob(t, s, job)
	got := dequeue(t, call, 5*time.Second)
	if got.Eval == nil || got.Eval.ID != reg.EvalID || got.Token == "" || got.WaitIndex < reg.EvalCreateIndex {
		t.Fatalf("dequeue = %+v, want eval %s with a token and wait index >= %d", got, reg.EvalID, reg.EvalCreateIndex)
	}
	eval := got.Eval

	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	alloc := mock.Alloc(stored, node)
	alloc.Name = job.ID + ".web[0]"
	alloc.EvalID = eval.ID
	alloc.AllocatedResources.Tasks["web"].Cpu.CpuShares = 50
	alloc.AllocatedResources.Tasks["web"].Memory.MemoryMB = 64
	plan := func(token string) *structs.Plan {
		return &structs.Plan{EvalID: eval.ID, EvalToken: token, Priority: eval.Priority, Job: stored,
			NodeAllocation: map[string][]*structs.Allocation{node.ID: {alloc}}}
	}
	complete := eval.Copy()
	complete.Status = structs.EvalStatusComplete

	errCases := []struct {
		name   string
		method string
		args   any
		reply  any
		code   structs.ErrorCode
	}{
		{"update with a stale token", "Eval.Update", &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{complete}, EvalToken: "stale"},
			&structs.GenericResponse{}, structs.ErrCodeTokenMismatch},
		{"update of an eval not held", "Eval.Update", &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{mock.Eval()}, EvalToken: got.Token},
			&structs.GenericResponse{}, structs.ErrCodeNotFound},
		{"create of an existing eval", "Eval.Create", &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{complete}, EvalToken: got.Token},
			&structs.GenericResponse{}, structs.ErrCodeInvalid},
		{"plan with a stale token", "Plan.Submit", &structs.PlanRequest{Plan: plan("stale")},
			&structs.PlanResponse{}, structs.ErrCodeTokenMismatch},
		{"ack with a stale token", "Eval.Ack", &structs.EvalAckRequest{EvalID: eval.ID, Token: "stale"},
			&structs.GenericResponse{}, structs.ErrCodeTokenMismatch},
		{"reblock of a pending eval", "Eval.Reblock", &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}, EvalToken: got.Token},
			&structs.GenericResponse{}, structs.ErrCodeInvalid},
		{"dequeue without schedulers", "Eval.Dequeue", &structs.EvalDequeueRequest{},
			&structs.EvalDequeueResponse{}, structs.ErrCodeInvalid},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			err := call(tc.method, tc.args, tc.reply)
			if structs.CodeOf(err) != tc.code {
				t.Fatalf("err = %v, want code %s", err, tc.code)
			}
		})
	}

	var planResp structs.PlanResponse
	if err := call("Plan.Submit", &structs.PlanRequest{Plan: plan(got.Token)}, &planResp); err != nil {
		t.Fatal(err)
	}
	if r := planResp.Result; r == nil || r.AllocIndex == 0 || len(r.RejectedNodes) != 0 {
		t.Fatalf("plan result %+v", planResp.Result)
	}
	placed, err := s.State().AllocByID(nil, alloc.ID)
	if err != nil || placed.Job == nil || placed.NodeID != node.ID {
		t.Fatalf("placed alloc %+v, %v", placed, err)
	}

	if err := call("Eval.Update", &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{complete}, EvalToken: got.Token}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := call("Eval.Ack", &structs.EvalAckRequest{EvalID: eval.ID, Token: got.Token}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := call("Eval.Ack", &structs.EvalAckRequest{EvalID: eval.ID, Token: got.Token}, &structs.GenericResponse{}); structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("second ack: %v, want not_found", err)
	}
	if e, err := s.State().EvalByID(nil, eval.ID); err != nil || e.Status != structs.EvalStatusComplete {
		t.Fatalf("eval after update: %+v, %v", e, err)
	}
}

// TestEvalDeliveryLimit: an evaluation nacked up to the delivery limit is
// marked failed with a delayed follow-up evaluation.
func TestEvalDeliveryLimit(t *testing.T) {
	s := schedServer(t, -1, func(cfg *server.Config) {
		cfg.EvalDeliveryLimit = 2
		cfg.EvalInitialNackDelay = time.Millisecond
		cfg.EvalSubsequentNackDelay = time.Millisecond
		cfg.FailedEvalFollowupDelay = time.Hour
	})
	call := remote(t, s)
	reg := submitJob(t, s, smallJob("web", 1))
	for i := 0; i < 2; i++ {
		got := dequeue(t, call, 5*time.Second)
		if got.Eval == nil || got.Eval.ID != reg.EvalID {
			t.Fatalf("delivery %d: %+v", i+1, got.Eval)
		}
		if err := call("Eval.Nack", &structs.EvalAckRequest{EvalID: got.Eval.ID, Token: got.Token}, &structs.GenericResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	st := s.State()
	var failed *structs.Evaluation
	waitFor(t, 5*time.Second, func() string {
		e, err := st.EvalByID(nil, reg.EvalID)
		if err != nil {
			return err.Error()
		}
		if e.Status != structs.EvalStatusFailed {
			return "eval is " + e.Status
		}
		failed = e
		return ""
	})
	follow, err := st.EvalByID(nil, failed.NextEval)
	if err != nil {
		t.Fatalf("follow-up %q: %v", failed.NextEval, err)
	}
	if follow.Status != structs.EvalStatusPending || follow.TriggeredBy != structs.EvalTriggerFailedFollowUp ||
		follow.PreviousEval != failed.ID || time.Until(follow.WaitUntil) < 50*time.Minute {
		t.Fatalf("follow-up %+v", follow)
	}
	// It waits: nothing is delivered now.
	if resp := dequeue(t, call, 100*time.Millisecond); resp.Eval != nil {
		t.Fatalf("delivered %s (%s) before its wait", resp.Eval.ID, resp.Eval.TriggeredBy)
	}
}

// TestJobPlanDryRun: Job.Plan reports what a registration would do and
// writes nothing.
func TestJobPlanDryRun(t *testing.T) {
	s := schedServer(t, 2)
	for i := 0; i < 2; i++ {
		registerNode(t, s, mock.Node())
	}
	st := s.State()
	before, _ := st.LatestIndex()

	plan := func(job *structs.Job) structs.JobPlanResponse {
		t.Helper()
		var resp structs.JobPlanResponse
		if err := s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job, Diff: true}, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	job := smallJob("web", 5)
	resp := plan(job)
	if du := resp.Annotations.DesiredTGUpdates["web"]; du == nil || du.Place != 5 {
		t.Fatalf("new job annotations %+v", resp.Annotations.DesiredTGUpdates["web"])
	}
	if resp.Diff == nil || resp.Diff.Type != "Added" || len(resp.FailedTGAllocs) != 0 || resp.JobModifyIndex != 0 {
		t.Fatalf("new job plan %+v", resp)
	}
	if after, _ := st.LatestIndex(); after != before {
		t.Fatalf("dry run wrote to state: index %d -> %d", before, after)
	}
	if _, err := st.JobByID(nil, job.Namespace, job.ID); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("dry run registered the job: %v", err)
	}

	reg := submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })

	same := plan(job)
	if same.Diff.Type != "None" || same.JobModifyIndex != reg.JobModifyIndex {
		t.Fatalf("unchanged job plan: diff %+v, job modify index %d want %d", same.Diff, same.JobModifyIndex, reg.JobModifyIndex)
	}
	if du := same.Annotations.DesiredTGUpdates["web"]; du == nil || *du != (structs.DesiredUpdates{Ignore: 5}) {
		t.Fatalf("unchanged job annotations %+v, want 5 ignored and nothing else", du)
	}
	// A Go-typed config value the store holds as []any is the same spec.
	typed := job.Copy()
	typed.TaskGroups[0].Tasks[0].Config["args"] = []string{"+%s", "--utc"}
	if same := plan(typed); same.Diff.Type != "None" || same.Annotations.DesiredTGUpdates["web"].Ignore != 5 {
		t.Fatalf("unchanged job with typed config: diff %+v annotations %+v", same.Diff, same.Annotations.DesiredTGUpdates["web"])
	}
	for _, tc := range []struct {
		name string
		edit func(j *structs.Job)
		want structs.DesiredUpdates
	}{
		{"kill timeout", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute }, structs.DesiredUpdates{InPlaceUpdate: 5}},
		{"env", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["NEW"] = "1" }, structs.DesiredUpdates{DestructiveUpdate: 5}},
		{"args", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["args"] = []any{"+%F"} }, structs.DesiredUpdates{DestructiveUpdate: 5}},
	} {
		edited := job.Copy()
		tc.edit(edited)
		resp := plan(edited)
		if du := resp.Annotations.DesiredTGUpdates["web"]; du == nil || *du != tc.want {
			t.Fatalf("%s change annotations %+v, want %+v", tc.name, du, tc.want)
		}
		// The diff says the same: the group's update counts, and what the
		// task's change forces.
		g := resp.Diff.TaskGroups[0]
		forces, update := "forces create/destroy update", "create/destroy update"
		if tc.want.InPlaceUpdate > 0 {
			forces, update = "forces in-place update", "in-place update"
		}
		if task := g.Tasks[0]; g.Updates[update] != 5 || len(task.Annotations) != 1 || task.Annotations[0] != forces {
			t.Fatalf("%s change diff: updates %v, task %s annotations %v", tc.name, g.Updates, task.Type, task.Annotations)
		}
	}

	bigger := job.Copy()
	bigger.TaskGroups[0].Count = 7
	resp = plan(bigger)
	if du := resp.Annotations.DesiredTGUpdates["web"]; du == nil || du.Place != 2 || du.Stop != 0 {
		t.Fatalf("scaled job annotations %+v", du)
	}
	if resp.Diff.Type != "Edited" {
		t.Fatalf("scaled job diff %+v", resp.Diff)
	}
	if g := resp.Diff.TaskGroups[0]; g.Updates["create"] != 2 || g.Updates["in-place update"] != 5 || len(g.Fields) != 1 ||
		g.Fields[0].Name != "Count" || len(g.Fields[0].Annotations) != 1 || g.Fields[0].Annotations[0] != "forces create" {
		t.Fatalf("scaled job group diff: updates %v fields %+v", g.Updates, g.Fields[0])
	}

	huge := smallJob("huge", 1)
	huge.TaskGroups[0].Tasks[0].Resources.MemoryMB = 1 << 20
	resp = plan(huge)
	if resp.FailedTGAllocs["web"] == nil {
		t.Fatalf("unplaceable job: FailedTGAllocs %+v", resp.FailedTGAllocs)
	}
	if len(liveAllocs(st, job.Namespace, job.ID)) != 5 {
		t.Fatal("dry runs changed the registered job's allocations")
	}
}

// TestAllocStopReplaces: a stopped allocation is replaced.
func TestAllocStopReplaces(t *testing.T) {
	s := schedServer(t, 2)
	registerNode(t, s, mock.Node())
	registerNode(t, s, mock.Node())
	st := s.State()
	job := smallJob("web", 3)
	submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	victim := liveAllocs(st, job.Namespace, job.ID)[0]

	var resp structs.AllocStopResponse
	if err := s.RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: victim.ID}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" || resp.Index == 0 {
		t.Fatalf("stop response %+v", resp)
	}
	waitFor(t, 10*time.Second, func() string {
		if msg := jobsPlaced(st, []*structs.Job{job}); msg != "" {
			return msg
		}
		for _, a := range liveAllocs(st, job.Namespace, job.ID) {
			if a.ID == victim.ID {
				return "stopped allocation still live"
			}
			if a.PreviousAllocation == victim.ID {
				return ""
			}
		}
		return "no replacement"
	})
	if err := s.RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: "nope"}, &resp); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("stop of an unknown alloc: %v", err)
	}
}

// TestUpdateAllocFailedReschedules: a client reporting an allocation failed
// gets it replaced per the reschedule policy, and the client's watch
// (GetClientAllocs) wakes for the changes.
func TestUpdateAllocFailedReschedules(t *testing.T) {
	s := schedServer(t, 2)
	node := mock.Node()
	nodeReg := registerNode(t, s, node)
	st := s.State()

	// The client's watch, started before anything is placed.
	watch := make(chan structs.NodeClientAllocsResponse, 1)
	go func() {
		args := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID}
		args.MinQueryIndex = nodeReg.Index
		args.MaxQueryTime = 10 * time.Second
		var resp structs.NodeClientAllocsResponse
		if err := s.RPC("Node.GetClientAllocs", args, &resp); err != nil {
			t.Errorf("watch: %v", err)
		}
		watch <- resp
	}()

	job := smallJob("web", 2)
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour, DelayFunction: structs.DelayFunctionConstant}
	submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	select {
	case resp := <-watch:
		if len(resp.Allocs) != 2 || resp.Index <= nodeReg.Index {
			t.Fatalf("watch woke with %+v", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not wake")
	}

	live := liveAllocs(st, job.Namespace, job.ID)
	failed := live[0]
	upd := []*structs.Allocation{
		{ID: failed.ID, ClientStatus: structs.AllocClientStatusFailed, ClientDescription: "exit 1"},
		{ID: live[1].ID, ClientStatus: structs.AllocClientStatusRunning},
	}
	if err := s.RPC("Node.UpdateAlloc", clientUpdate(t, st, upd...), &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string {
		var replaced bool
		for _, a := range liveAllocs(st, job.Namespace, job.ID) {
			if a.PreviousAllocation == failed.ID {
				replaced = true
			}
		}
		if !replaced {
			return "failed allocation not replaced"
		}
		return jobsPlaced(st, []*structs.Job{job})
	})
	var retries int
	for _, e := range jobEvals(t, st, job) {
		if e.TriggeredBy == structs.EvalTriggerRetryFailedAlloc {
			retries++
		}
	}
	if retries != 1 {
		t.Fatalf("%d alloc-failure evaluations, want 1", retries)
	}
	running, err := st.AllocByID(nil, live[1].ID)
	if err != nil || running.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("running update not applied: %+v, %v", running, err)
	}
}

// TestNodeDrainMigrates: draining a node (the built-in drainer does the
// marking) moves its allocations to other nodes and completes; the node
// can be made eligible again.
func TestNodeDrainMigrates(t *testing.T) {
	s := schedServer(t, 2)
	st := s.State()
	drained := mock.Node()
	registerNode(t, s, drained)
	job := smallJob("web", 3)
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 3}
	submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	registerNode(t, s, mock.Node())
	// The drainer moves only allocations that run.
	var running []*structs.Allocation
	for _, a := range liveAllocs(st, job.Namespace, job.ID) {
		running = append(running, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning})
	}
	if err := s.RPC("Node.UpdateAlloc", clientUpdate(t, st, running...), &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}

	var resp structs.NodeUpdateResponse
	args := &structs.NodeUpdateDrainRequest{NodeID: drained.ID, DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}}
	if err := s.RPC("Node.UpdateDrain", args, &resp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string {
		if msg := jobsPlaced(st, []*structs.Job{job}); msg != "" {
			return msg
		}
		for _, a := range liveAllocs(st, job.Namespace, job.ID) {
			if a.NodeID == drained.ID {
				return fmt.Sprintf("allocation %s still on the drained node", a.Name)
			}
		}
		return ""
	})
	checkPlacements(t, st)
	waitFor(t, 10*time.Second, func() string {
		node, err := st.NodeByID(nil, drained.ID)
		if err != nil {
			return err.Error()
		}
		if node.DrainStrategy != nil {
			return "drain not complete"
		}
		return ""
	})
	elig := &structs.NodeUpdateEligibilityRequest{NodeID: drained.ID, Eligibility: structs.NodeSchedulingEligible}
	if err := s.RPC("Node.UpdateEligibility", elig, &resp); err != nil {
		t.Fatal(err)
	}
	node, err := st.NodeByID(nil, drained.ID)
	if err != nil || !node.Ready() {
		t.Fatalf("node after drain end: %+v, %v", node, err)
	}

	// A drain in progress refuses eligibility, and ends with MarkEligible.
	args = &structs.NodeUpdateDrainRequest{NodeID: drained.ID, DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}}
	if err := s.RPC("Node.UpdateDrain", args, &resp); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("Node.UpdateEligibility", elig, &resp); structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("eligible while draining: %v, want invalid", err)
	}
	args = &structs.NodeUpdateDrainRequest{NodeID: drained.ID, MarkEligible: true}
	if err := s.RPC("Node.UpdateDrain", args, &resp); err != nil {
		t.Fatal(err)
	}
	if node, err = st.NodeByID(nil, drained.ID); err != nil || !node.Ready() {
		t.Fatalf("node after the drain was disabled: %+v, %v", node, err)
	}
}

// TestSupersededEvalsCanceled: the leader cancels through Raft what the
// broker supersedes (older pending evaluations of a job released behind
// a newer one) and what blocked evals replaces (an older blocked
// evaluation of the same job).
func TestSupersededEvalsCanceled(t *testing.T) {
	s := schedServer(t, -1)
	call := remote(t, s)
	st := s.State()
	job := smallJob("web", 1)
	first := submitJob(t, s, job)
	held := dequeue(t, call, 5*time.Second)
	if held.Eval == nil || held.Eval.ID != first.EvalID {
		t.Fatalf("dequeue = %+v", held.Eval)
	}
	older := submitJob(t, s, job) // both wait behind the held one
	newer := submitJob(t, s, job)

	// The worker finishes the first evaluation with a blocked follow-up.
	failed := map[string]*structs.AllocMetric{"web": {NodesEvaluated: 1}}
	complete := held.Eval.Copy()
	complete.Status, complete.FailedTGAllocs = structs.EvalStatusComplete, failed
	blocked1 := held.Eval.CreateBlockedEval(map[string]bool{}, false, failed, time.Now())
	upd := &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{complete, blocked1}, EvalToken: held.Token}
	if err := call("Eval.Update", upd, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := call("Eval.Ack", &structs.EvalAckRequest{EvalID: held.Eval.ID, Token: held.Token}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}

	// The newest waiting evaluation is delivered; the older one is
	// canceled.
	next := dequeue(t, call, 5*time.Second)
	if next.Eval == nil || next.Eval.ID != newer.EvalID {
		t.Fatalf("after ack delivered %+v, want the newest evaluation %s", next.Eval, newer.EvalID)
	}
	waitStatus := func(id, status string) {
		t.Helper()
		waitFor(t, 5*time.Second, func() string {
			e, err := st.EvalByID(nil, id)
			if err != nil {
				return err.Error()
			}
			if e.Status != status {
				return fmt.Sprintf("eval %s is %s, want %s", id, e.Status, status)
			}
			return ""
		})
	}
	waitStatus(older.EvalID, structs.EvalStatusCancelled)

	// A newer blocked evaluation of the job replaces the first.
	complete2 := next.Eval.Copy()
	complete2.Status, complete2.FailedTGAllocs = structs.EvalStatusComplete, failed
	blocked2 := next.Eval.CreateBlockedEval(map[string]bool{}, false, failed, time.Now())
	upd = &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{complete2, blocked2}, EvalToken: next.Token}
	if err := call("Eval.Update", upd, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(blocked1.ID, structs.EvalStatusCancelled)
	waitStatus(blocked2.ID, structs.EvalStatusBlocked)
}

// TestSystemJobOnNewNode: a system job runs on every node, and a node that
// registers later gets its allocation.
func TestSystemJobOnNewNode(t *testing.T) {
	s := schedServer(t, 2)
	st := s.State()
	registerNode(t, s, mock.Node())
	registerNode(t, s, mock.Node())
	job := smallJob("agent", 1)
	job.Type = structs.JobTypeSystem
	job.TaskGroups[0].ReschedulePolicy = nil
	job.TaskGroups[0].Migrate = nil
	submitJob(t, s, job)
	onNodes := func(want int) func() string {
		return func() string {
			live := liveAllocs(st, job.Namespace, job.ID)
			nodes := map[string]bool{}
			for _, a := range live {
				nodes[a.NodeID] = true
			}
			if len(live) != want || len(nodes) != want {
				return fmt.Sprintf("%d allocations on %d nodes, want %d", len(live), len(nodes), want)
			}
			return ""
		}
	}
	waitFor(t, 10*time.Second, onNodes(2))
	late := mock.Node()
	reg := registerNode(t, s, late)
	if len(reg.EvalIDs) != 1 {
		t.Fatalf("registration created evals %v, want one for the system job", reg.EvalIDs)
	}
	waitFor(t, 10*time.Second, onNodes(3))
	checkPlacements(t, st)
}

// TestUpdateAllocConcurrent: concurrent client updates (group-committed)
// are all applied and each caller gets an index that includes its own.
func TestUpdateAllocConcurrent(t *testing.T) {
	s := schedServer(t, 2)
	st := s.State()
	registerNode(t, s, mock.Node())
	job := smallJob("web", 40)
	submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	live := liveAllocs(st, job.Namespace, job.ID)
	errs := make(chan error, len(live))
	for _, a := range live {
		req := clientUpdate(t, st, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning})
		go func() {
			var resp structs.GenericResponse
			err := s.RPC("Node.UpdateAlloc", req, &resp)
			if err == nil {
				if got, gerr := st.AllocByID(nil, a.ID); gerr != nil || got.ModifyIndex > resp.Index || got.ClientStatus != structs.AllocClientStatusRunning {
					err = fmt.Errorf("alloc %s after update at %d: %+v, %v", a.ID, resp.Index, got, gerr)
				}
			}
			errs <- err
		}()
	}
	for range live {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestGetClientAllocsInline: with InlineAllocs the watch's answer carries
// the allocations modified after MinQueryIndex (up to the limit, in ID
// order, each with its job), and without it none.
func TestGetClientAllocsInline(t *testing.T) {
	s := schedServer(t, 2)
	node := mock.Node()
	nodeReg := registerNode(t, s, node)
	st := s.State()
	job := smallJob("web", 3)
	submitJob(t, s, job)
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })

	watch := func(min uint64, inline int) structs.NodeClientAllocsResponse {
		t.Helper()
		args := &structs.NodeSpecificRequest{NodeID: node.ID, SecretID: node.SecretID, InlineAllocs: inline}
		args.MinQueryIndex = min
		args.MaxQueryTime = time.Second
		var resp structs.NodeClientAllocsResponse
		if err := s.RPC("Node.GetClientAllocs", args, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := watch(nodeReg.Index, 2)
	if len(resp.Allocs) != 3 || len(resp.Changed) != 2 {
		t.Fatalf("answer lists %d allocations and carries %d; want 3 and 2", len(resp.Allocs), len(resp.Changed))
	}
	for i, a := range resp.Changed {
		if a.Job == nil || a.NodeID != node.ID || !hasAllocIndex(resp.Allocs, a.ID, a.AllocModifyIndex) || a.AllocModifyIndex <= nodeReg.Index {
			t.Fatalf("carried allocation %d: %+v", i, a)
		}
		if i > 0 && resp.Changed[i-1].ID >= a.ID {
			t.Fatalf("carried allocations not in ID order")
		}
	}
	if resp := watch(nodeReg.Index, 0); resp.Changed != nil {
		t.Fatalf("carried %d allocations without InlineAllocs", len(resp.Changed))
	}
	// Nothing modified after the answer's index: a timed-out query
	// carries nothing.
	if resp := watch(resp.Index, 10); len(resp.Changed) != 0 {
		t.Fatalf("carried %d allocations not modified after MinQueryIndex", len(resp.Changed))
	}
}

// hasAllocIndex reports whether x lists allocation id at index.
func hasAllocIndex(x structs.AllocIndexes, id string, index uint64) bool {
	got, ok := x.Get(id)
	return ok && got == index
}
