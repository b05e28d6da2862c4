package fsm

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// recordingHooks records every hook call as a line of text.
type recordingHooks struct {
	mu    sync.Mutex
	calls []string // guarded by mu
}

func (h *recordingHooks) add(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf(format, args...))
}

func (h *recordingHooks) EvalsUpserted(evals []*structs.Evaluation) {
	ids := make([]string, len(evals))
	for i, e := range evals {
		ids[i] = e.ID
	}
	h.add("evals %s", strings.Join(ids, ","))
}

func (h *recordingHooks) NodeChanged(node *structs.Node, index uint64) {
	h.add("node %s %s %s %d", node.ID, node.Status, node.SchedulingEligibility, index)
}

func (h *recordingHooks) AllocsTerminal(nodeID string, index uint64) {
	h.add("terminal %s %d", nodeID, index)
}

func (h *recordingHooks) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.calls
	h.calls = nil
	return out
}

func testFSM(t testing.TB) (*FSM, *recordingHooks) {
	t.Helper()
	hooks := &recordingHooks{}
	f, err := New(Config{Hooks: hooks})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f, hooks
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// apply encodes msg as type mt and applies it at index.
func apply(t testing.TB, f *FSM, index uint64, mt structs.MessageType, msg any) any {
	t.Helper()
	buf, err := structs.Encode(mt, msg)
	must(t, err)
	return f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: buf})
}

func TestApplyEveryMessageType(t *testing.T) {
	f, hooks := testFSM(t)
	node := mock.Node()
	job := mock.Job()
	jobEval := mock.EvalFor(job)
	alloc := mock.Alloc(job, node)
	alloc.Job = nil
	nodeEval := mock.Eval()
	failEval := mock.EvalFor(job)
	gcEval := mock.EvalFor(job)
	drainEval := mock.EvalFor(job)
	yes := true
	gcEval.Status = structs.EvalStatusComplete
	// The plan carries the job as the scheduler read it: registered at 2.
	planJob := job.Copy()
	planJob.CreateIndex, planJob.ModifyIndex, planJob.JobModifyIndex = 2, 2, 2

	steps := []struct {
		name      string
		mt        structs.MessageType
		msg       any
		wantHooks []string
		check     func(t *testing.T, s *state.StateStore)
	}{
		{
			name: "node register", mt: structs.NodeRegisterRequestType,
			msg:       &structs.NodeRegisterRequest{Node: node, CreateEvals: []*structs.Evaluation{nodeEval}},
			wantHooks: []string{"node " + node.ID + " ready eligible 1", "evals " + nodeEval.ID},
			check: func(t *testing.T, s *state.StateStore) {
				n, err := s.NodeByID(nil, node.ID)
				must(t, err)
				if n.CreateIndex != 1 {
					t.Fatalf("node create index %d", n.CreateIndex)
				}
			},
		},
		{
			name: "job register", mt: structs.JobRegisterRequestType,
			msg:       &structs.JobRegisterRequest{Job: job, Eval: jobEval},
			wantHooks: []string{"evals " + jobEval.ID},
			check: func(t *testing.T, s *state.StateStore) {
				j, err := s.JobByID(nil, job.Namespace, job.ID)
				must(t, err)
				if j.JobModifyIndex != 2 {
					t.Fatalf("job modify index %d", j.JobModifyIndex)
				}
				if _, err := s.EvalByID(nil, jobEval.ID); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "plan results", mt: structs.ApplyPlanResultsRequestType,
			msg: &structs.ApplyPlanResultsRequest{Job: planJob, AllocsUpdated: []*structs.Allocation{alloc},
				EvalID: jobEval.ID, UpdatedAt: 10},
			check: func(t *testing.T, s *state.StateStore) {
				a, err := s.AllocByID(nil, alloc.ID)
				must(t, err)
				if a.Job == nil || a.Job.JobModifyIndex != 2 || a.Job.Status != structs.JobStatusPending || a.CreateIndex != 3 {
					t.Fatalf("placed alloc %+v", a)
				}
			},
		},
		{
			name: "alloc client update", mt: structs.AllocClientUpdateRequestType,
			msg: &structs.AllocUpdateRequest{
				Alloc: []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusFailed}},
				Evals: []*structs.Evaluation{failEval}},
			wantHooks: []string{"terminal " + node.ID + " 4", "evals " + failEval.ID},
			check: func(t *testing.T, s *state.StateStore) {
				a, err := s.AllocByID(nil, alloc.ID)
				must(t, err)
				if a.ClientStatus != structs.AllocClientStatusFailed {
					t.Fatalf("client status %q", a.ClientStatus)
				}
			},
		},
		{
			name: "alloc desired transition", mt: structs.AllocUpdateDesiredTransitionRequestType,
			msg: &structs.AllocUpdateDesiredTransitionRequest{
				Allocs:    map[string]*structs.DesiredTransition{alloc.ID: {Migrate: &yes}, "unknown": {Migrate: &yes}},
				Evals:     []*structs.Evaluation{drainEval},
				UpdatedAt: 55},
			wantHooks: []string{"evals " + drainEval.ID},
			check: func(t *testing.T, s *state.StateStore) {
				a, err := s.AllocByID(nil, alloc.ID)
				must(t, err)
				if !a.DesiredTransition.ShouldMigrate() || a.ClientStatus != structs.AllocClientStatusFailed ||
					a.AllocModifyIndex != 5 || a.ModifyTime != 55 {
					t.Fatalf("alloc after transition %+v", a)
				}
				if _, err := s.EvalByID(nil, drainEval.ID); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "eval update", mt: structs.EvalUpdateRequestType,
			msg:       &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{gcEval}},
			wantHooks: []string{"evals " + gcEval.ID},
			check: func(t *testing.T, s *state.StateStore) {
				if _, err := s.EvalByID(nil, gcEval.ID); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "node update status", mt: structs.NodeUpdateStatusRequestType,
			msg:       &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: structs.NodeStatusDown, UpdatedAt: 77},
			wantHooks: []string{"node " + node.ID + " down eligible 7"},
		},
		{
			name: "node update drain", mt: structs.NodeUpdateDrainRequestType,
			msg:       &structs.NodeUpdateDrainRequest{NodeID: node.ID, DrainStrategy: &structs.DrainStrategy{Deadline: time.Minute}},
			wantHooks: []string{"node " + node.ID + " down ineligible 8"},
			check: func(t *testing.T, s *state.StateStore) {
				n, err := s.NodeByID(nil, node.ID)
				must(t, err)
				if !n.Drain {
					t.Fatal("node not draining")
				}
			},
		},
		{
			name: "node update eligibility", mt: structs.NodeUpdateEligibilityRequestType,
			msg:       &structs.NodeUpdateEligibilityRequest{NodeID: node.ID, Eligibility: structs.NodeSchedulingIneligible},
			wantHooks: []string{"node " + node.ID + " down ineligible 9"},
		},
		{
			name: "eval delete", mt: structs.EvalDeleteRequestType,
			msg: &structs.EvalDeleteRequest{Evals: []string{gcEval.ID}, Allocs: []string{alloc.ID}},
			check: func(t *testing.T, s *state.StateStore) {
				if _, err := s.AllocByID(nil, alloc.ID); !errors.Is(err, structs.ErrNotFound) {
					t.Fatalf("alloc not deleted: %v", err)
				}
			},
		},
		{
			name: "job deregister", mt: structs.JobDeregisterRequestType,
			msg: &structs.JobDeregisterRequest{JobID: job.ID, Purge: true, WriteRequest: structs.WriteRequest{Namespace: job.Namespace}},
			check: func(t *testing.T, s *state.StateStore) {
				if _, err := s.JobByID(nil, job.Namespace, job.ID); !errors.Is(err, structs.ErrNotFound) {
					t.Fatalf("job not purged: %v", err)
				}
			},
		},
		{
			name: "node deregister", mt: structs.NodeDeregisterRequestType,
			msg: &structs.NodeDeregisterRequest{NodeIDs: []string{node.ID}},
			check: func(t *testing.T, s *state.StateStore) {
				if _, err := s.NodeByID(nil, node.ID); !errors.Is(err, structs.ErrNotFound) {
					t.Fatalf("node not deleted: %v", err)
				}
			},
		},
	}
	covered := map[structs.MessageType]bool{}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			index := uint64(i + 1)
			if res := apply(t, f, index, st.mt, st.msg); res != nil {
				t.Fatalf("Apply returned %v", res)
			}
			covered[st.mt] = true
			if got := hooks.take(); fmt.Sprint(got) != fmt.Sprint(st.wantHooks) {
				t.Fatalf("hooks %q, want %q", got, st.wantHooks)
			}
			if st.check != nil {
				st.check(t, f.State())
			}
			latest, err := f.State().LatestIndex()
			must(t, err)
			if latest != index {
				t.Fatalf("latest index %d, want %d", latest, index)
			}
		})
	}
	covered[structs.ApplyPlanResultsGroupedRequestType] = true // TestApplyGroupedPlanResults
	for mt := structs.NodeRegisterRequestType; mt <= structs.ApplyPlanResultsGroupedRequestType; mt++ {
		if !covered[mt] {
			t.Errorf("message type %s not covered", mt)
		}
	}
}

// TestApplyGroupedPlanResults applies a plan whose placements the leader
// grouped (its own message type) and checks every allocation is stored,
// sharing its group's resources.
func TestApplyGroupedPlanResults(t *testing.T) {
	f, _ := testFSM(t)
	job := mock.Job()
	must(t, f.State().UpsertJob(1, job, nil))
	stored, err := f.State().JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	n1, n2 := mock.Node(), mock.Node()
	evalID := structs.GenerateUUID()
	req := &structs.ApplyPlanResultsRequest{Job: stored, EvalID: evalID, UpdatedAt: 5}
	for _, n := range []*structs.Node{n1, n2, n2} {
		a := mock.Alloc(stored, n)
		a.Job, a.EvalID = nil, evalID
		req.AllocsUpdated = append(req.AllocsUpdated, a)
	}
	want := append([]*structs.Allocation(nil), req.AllocsUpdated...)
	req.Compact()
	if len(req.AllocGroups) != 1 || len(req.AllocsUpdated) != 0 {
		t.Fatalf("Compact made %d groups and left %d", len(req.AllocGroups), len(req.AllocsUpdated))
	}
	if res := apply(t, f, 2, structs.ApplyPlanResultsGroupedRequestType, req); res != nil {
		t.Fatalf("apply: %v", res)
	}
	var resources *structs.AllocatedResources
	for _, w := range want {
		a, err := f.State().AllocByID(nil, w.ID)
		must(t, err)
		if a.NodeID != w.NodeID || a.Name != w.Name || a.Job != stored || a.CreateIndex != 2 || a.AllocatedResources == nil {
			t.Fatalf("stored %+v, want it on %s named %s at 2 with the stored job", a, w.NodeID, w.Name)
		}
		if resources != nil && a.AllocatedResources != resources {
			t.Fatalf("group members do not share resources")
		}
		resources = a.AllocatedResources
	}
	onN2, err := f.State().AllocsByNode(nil, n2.ID)
	must(t, err)
	if len(onN2) != 2 {
		t.Fatalf("%d allocations on n2, want 2", len(onN2))
	}
}

func TestApplyPlanStopHooks(t *testing.T) {
	f, hooks := testFSM(t)
	job := mock.Job()
	n1, n2 := mock.Node(), mock.Node()
	must(t, f.State().UpsertJob(1, job, nil))
	a1, a2, a3 := mock.Alloc(job, n1), mock.Alloc(job, n2), mock.Alloc(job, n2)
	a3.DesiredStatus = structs.AllocDesiredStatusStop // already terminal
	must(t, f.State().UpsertAllocs(2, []*structs.Allocation{a1, a2, a3}))
	stop := func(a *structs.Allocation) *structs.Allocation {
		return &structs.Allocation{ID: a.ID, DesiredStatus: structs.AllocDesiredStatusStop}
	}
	res := apply(t, f, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{stop(a1), stop(a3), stop(a1)}})
	if res != nil {
		t.Fatal(res)
	}
	if got := hooks.take(); fmt.Sprint(got) != fmt.Sprint([]string{"terminal " + n1.ID + " 3"}) {
		t.Fatalf("hooks %q", got)
	}
}

func TestApplyJobRegisterEnforceIndex(t *testing.T) {
	cases := []struct {
		name     string
		existing bool
		index    uint64
		wantErr  structs.ErrorCode
	}{
		{"new job, index 0", false, 0, ""},
		{"new job, index set", false, 5, structs.ErrCodeConflict},
		{"existing, index 0", true, 0, structs.ErrCodeConflict},
		{"existing, stale index", true, 4, structs.ErrCodeConflict},
		{"existing, matching index", true, 5, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, hooks := testFSM(t)
			job := mock.Job()
			if tc.existing {
				must(t, f.State().UpsertJob(5, job.Copy(), nil))
			}
			eval := mock.EvalFor(job)
			res := apply(t, f, 10, structs.JobRegisterRequestType, &structs.JobRegisterRequest{
				Job: job, EnforceIndex: true, JobModifyIndex: tc.index, Eval: eval})
			err, _ := res.(error)
			if res != nil && err == nil {
				t.Fatalf("Apply returned non-error %T", res)
			}
			if structs.CodeOf(err) != tc.wantErr {
				t.Fatalf("error %v, want code %q", err, tc.wantErr)
			}
			_, evalErr := f.State().EvalByID(nil, eval.ID)
			if tc.wantErr != "" {
				if !errors.Is(evalErr, structs.ErrNotFound) || len(hooks.take()) != 0 {
					t.Fatal("a refused register wrote its eval or fired hooks")
				}
				if idx, _ := f.State().Index(state.TableJobs); idx == 10 {
					t.Fatal("a refused register wrote the job")
				}
			} else if evalErr != nil {
				t.Fatalf("eval not written: %v", evalErr)
			}
		})
	}
}

func TestApplyRefusedWriteReturnsTypedError(t *testing.T) {
	f, hooks := testFSM(t)
	res := apply(t, f, 3, structs.NodeUpdateStatusRequestType,
		&structs.NodeUpdateStatusRequest{NodeID: "missing", Status: structs.NodeStatusReady})
	err, ok := res.(error)
	if !ok || !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("Apply returned %v, want a not-found error", res)
	}
	if len(hooks.take()) != 0 {
		t.Fatal("hooks fired for a refused write")
	}
}

func TestApplyUnknownType(t *testing.T) {
	const unknown = structs.MessageType(99)
	cases := []struct {
		name      string
		data      []byte
		wantPanic bool
	}{
		{"ignore flag set", []byte{byte(unknown | structs.IgnoreUnknownTypeFlag), 0x80}, false},
		{"no ignore flag", []byte{byte(unknown), 0x80}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := testFSM(t)
			var res any
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				res = f.Apply(&raft.Log{Index: 7, Data: tc.data})
				return false
			}()
			if panicked != tc.wantPanic {
				t.Fatalf("panicked = %v, want %v", panicked, tc.wantPanic)
			}
			if !tc.wantPanic && res != nil {
				t.Fatalf("ignored entry returned %v", res)
			}
			if latest, _ := f.State().LatestIndex(); latest != 0 {
				t.Fatal("an unknown entry changed the state")
			}
		})
	}
}

// A malformed entry is refused with an invalid-input error and writes
// nothing; it does not stop the server (found by FuzzApply: a panic here
// stops every server, and again at each replay).
func TestApplyMalformedEntry(t *testing.T) {
	cases := []struct {
		name string
		data []byte
	}{
		{"empty entry", nil},
		{"known type, undecodable body", []byte{byte(structs.JobRegisterRequestType), 0xc1}},
		{"known type, no body", []byte{byte(structs.JobRegisterRequestType)}},
		{"known type, truncated body", []byte{byte(structs.NodeRegisterRequestType), 0x81, 0xa4, 'N', 'o', 'd', 'e', 0xde}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, hooks := testFSM(t)
			res := f.Apply(&raft.Log{Index: 7, Data: tc.data})
			if err, ok := res.(error); !ok || structs.CodeOf(err) != structs.ErrCodeInvalid {
				t.Fatalf("Apply returned %v; want an invalid-input error", res)
			}
			if latest, _ := f.State().LatestIndex(); latest != 0 {
				t.Fatal("a malformed entry changed the state")
			}
			if calls := hooks.take(); len(calls) != 0 {
				t.Fatalf("hooks fired: %v", calls)
			}
		})
	}
}

func TestApplyKnownTypeWithIgnoreFlag(t *testing.T) {
	// The flag only matters for unknown types: a known one is applied.
	f, _ := testFSM(t)
	node := mock.Node()
	if res := apply(t, f, 4, structs.NodeRegisterRequestType|structs.IgnoreUnknownTypeFlag,
		&structs.NodeRegisterRequest{Node: node}); res != nil {
		t.Fatal(res)
	}
	if _, err := f.State().NodeByID(nil, node.ID); err != nil {
		t.Fatal(err)
	}
}
