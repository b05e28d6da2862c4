package fsm

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// mixedLog returns a sequence of entries of every kind, including refused
// ones (a check-and-set conflict, found before writing; a node deregister
// that fails after deleting its first node; an invalid eligibility), an
// ignored unknown type and a Raft configuration entry.
func mixedLog(t *testing.T) []*raft.Log {
	t.Helper()
	n1, n2 := mock.Node(), mock.Node()
	j1, j2 := mock.Job(), mock.Job()
	e1 := mock.EvalFor(j1)
	a1, a2 := mock.Alloc(j1, n1), mock.Alloc(j1, n2)
	a1.Job, a2.Job = nil, nil
	a1.EvalID, a2.EvalID = e1.ID, e1.ID
	done := e1.Copy()
	done.Status = structs.EvalStatusComplete
	done.QueuedAllocations = map[string]int{"web": 0}
	planJob := j1.Copy()
	const j1Index = 3
	planJob.CreateIndex, planJob.ModifyIndex, planJob.JobModifyIndex = j1Index, j1Index, j1Index

	var logs []*raft.Log
	add := func(mt structs.MessageType, msg any) {
		buf, err := structs.Encode(mt, msg)
		must(t, err)
		logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: buf})
	}
	add(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n1, CreateEvals: []*structs.Evaluation{mock.Eval()}})
	add(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n2})
	add(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j1, Eval: e1}) // index 3
	add(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j1.Copy(), EnforceIndex: true, JobModifyIndex: 2, Eval: mock.EvalFor(j1)})
	add(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: planJob,
		AllocsUpdated: []*structs.Allocation{a1, a2}, EvalID: e1.ID, Evals: []*structs.Evaluation{done}, UpdatedAt: 10})
	add(structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{n2.ID, "missing"}})
	add(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{
		Alloc: []*structs.Allocation{{ID: a1.ID, ClientStatus: structs.AllocClientStatusFailed}},
		Evals: []*structs.Evaluation{mock.EvalFor(j1)}})
	add(structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{NodeID: n1.ID, Eligibility: "bogus"})
	logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand,
		Data: []byte{byte(structs.MessageType(99) | structs.IgnoreUnknownTypeFlag), 0x80}})
	logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogConfiguration, Data: []byte{1, 2, 3}})
	add(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j2, Eval: mock.EvalFor(j2)})
	add(structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: n1.ID,
		DrainStrategy: &structs.DrainStrategy{Deadline: time.Hour}, CreateEvals: []*structs.Evaluation{mock.Eval()}})
	add(structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: n2.ID, Status: structs.NodeStatusDown, UpdatedAt: 20})
	add(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{mock.EvalFor(j2)}})
	add(structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: j1.ID, Eval: mock.EvalFor(j1)})
	add(structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{Evals: []string{done.ID}, Allocs: []string{a2.ID}})
	add(structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "missing"})
	add(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j2.Copy(), Eval: mock.EvalFor(j2)})
	return logs
}

func TestApplyBatchMatchesApply(t *testing.T) {
	logs := mixedLog(t)
	want, wantHooks := testFSM(t)
	var wantResults []any
	for _, l := range logs {
		wantResults = append(wantResults, want.Apply(l))
	}
	// The refusals this log is built to contain.
	refused := map[uint64]structs.ErrorCode{4: structs.ErrCodeConflict, 6: structs.ErrCodeNotFound,
		8: structs.ErrCodeInvalid, 17: structs.ErrCodeNotFound}
	for i, res := range wantResults {
		code, ok := refused[logs[i].Index]
		err, isErr := res.(error)
		if ok != isErr || structs.CodeOf(err) != code {
			t.Fatalf("entry %d: result %v, want code %q", logs[i].Index, res, code)
		}
	}
	wantCalls := wantHooks.take()

	for _, size := range []int{2, 3, 5, 7, len(logs)} {
		t.Run(fmt.Sprintf("batch=%d", size), func(t *testing.T) {
			got, gotHooks := testFSM(t)
			var results []any
			for start := 0; start < len(logs); start += size {
				results = append(results, got.ApplyBatch(logs[start:min(start+size, len(logs))])...)
			}
			if fmt.Sprint(results) != fmt.Sprint(wantResults) {
				t.Fatalf("results\n%v\nwant\n%v", results, wantResults)
			}
			if calls := gotHooks.take(); fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
				t.Fatalf("hooks\n%q\nwant\n%q", calls, wantCalls)
			}
			sameState(t, want.State(), got.State())
		})
	}
}

func TestApplyBatchRefusedEntryWritesNothing(t *testing.T) {
	f, hooks := testFSM(t)
	n1 := mock.Node()
	job := mock.Job()
	eval := mock.EvalFor(job)
	entry := func(index uint64, mt structs.MessageType, msg any) *raft.Log {
		buf, err := structs.Encode(mt, msg)
		must(t, err)
		return &raft.Log{Index: index, Type: raft.LogCommand, Data: buf}
	}
	results := f.ApplyBatch([]*raft.Log{
		entry(1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n1}),
		// Deletes n1, then fails on the missing node: n1 must survive.
		entry(2, structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{n1.ID, "missing"}}),
		entry(3, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: eval}),
	})
	if results[0] != nil || results[2] != nil {
		t.Fatalf("results %v", results)
	}
	if err, _ := results[1].(error); !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("refused entry returned %v, want not found", results[1])
	}
	if _, err := f.State().NodeByID(nil, n1.ID); err != nil {
		t.Fatalf("the refused deregister deleted a node: %v", err)
	}
	if _, err := f.State().JobByID(nil, job.Namespace, job.ID); err != nil {
		t.Fatalf("the entry after the refused one was lost: %v", err)
	}
	for table, want := range map[string]uint64{"nodes": 1, "jobs": 3, "evals": 3} {
		if got, _ := f.State().Index(table); got != want {
			t.Errorf("index of %s = %d, want %d", table, got, want)
		}
	}
	wantCalls := []string{"node " + n1.ID + " ready eligible 1", "evals " + eval.ID}
	if calls := hooks.take(); fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
		t.Fatalf("hooks %q, want %q", calls, wantCalls)
	}
}

// TestApplyBatchProperty applies random sequences of entries over a small
// set of nodes, jobs, evaluations and allocations (so entries often touch
// the same rows, and some are refused part-way) one by one to one FSM and
// in random batches to another, and requires the same results, hooks and
// state. Under -race, the state store also checks every lookup a batch
// answers from its own writes against memdb.
func TestApplyBatchProperty(t *testing.T) {
	nodes := make([]*structs.Node, 3)
	for i := range nodes {
		nodes[i] = mock.Node()
	}
	jobs := []*structs.Job{mock.Job(), mock.BatchJob(), mock.Job()}
	evalIDs := make([]string, 6)
	allocIDs := make([]string, 6)
	for i := range evalIDs {
		evalIDs[i] = structs.GenerateUUID()
		allocIDs[i] = structs.GenerateUUID()
	}
	evalStatuses := []string{structs.EvalStatusPending, structs.EvalStatusBlocked,
		structs.EvalStatusComplete, structs.EvalStatusFailed}
	clientStatuses := []string{structs.AllocClientStatusRunning, structs.AllocClientStatusComplete,
		structs.AllocClientStatusFailed, structs.AllocClientStatusLost}

	rapid.Check(t, func(rt *rapid.T) {
		pick := func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(rt, label) }
		eval := func(j int) *structs.Evaluation {
			e := mock.EvalFor(jobs[j])
			e.ID = evalIDs[pick("eval", len(evalIDs))]
			e.Status = evalStatuses[pick("eval_status", len(evalStatuses))]
			if rapid.Bool().Draw(rt, "queued") {
				e.QueuedAllocations = map[string]int{jobs[j].TaskGroups[0].Name: pick("queued", 3)}
			}
			return e
		}
		var logs []*raft.Log
		add := func(mt structs.MessageType, msg any) {
			buf, err := structs.Encode(mt, msg)
			if err != nil {
				rt.Fatal(err)
			}
			logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: buf})
		}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for s := 0; s < steps; s++ {
			n, j := pick("node", len(nodes)), pick("job", len(jobs))
			switch pick("op", 11) {
			case 0:
				add(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: nodes[n], CreateEvals: []*structs.Evaluation{eval(j)}})
			case 1:
				add(structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: nodes[n].ID,
					Status: []string{structs.NodeStatusReady, structs.NodeStatusDown}[pick("status", 2)], UpdatedAt: int64(s)})
			case 2:
				add(structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{NodeID: nodes[n].ID,
					Eligibility: []string{structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible, "bogus"}[pick("elig", 3)]})
			case 3:
				req := &structs.NodeUpdateDrainRequest{NodeID: nodes[n].ID, MarkEligible: rapid.Bool().Draw(rt, "mark")}
				if rapid.Bool().Draw(rt, "drain") {
					req.DrainStrategy = &structs.DrainStrategy{Deadline: time.Hour}
				}
				add(structs.NodeUpdateDrainRequestType, req)
			case 4:
				add(structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{nodes[n].ID, nodes[pick("node2", len(nodes))].ID}})
			case 5:
				req := &structs.JobRegisterRequest{Job: jobs[j], Eval: eval(j)}
				if rapid.Bool().Draw(rt, "enforce") {
					req.EnforceIndex, req.JobModifyIndex = true, uint64(pick("cas", len(logs)+1))
				}
				add(structs.JobRegisterRequestType, req)
			case 6:
				add(structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: jobs[j].ID,
					Purge: rapid.Bool().Draw(rt, "purge"), Eval: eval(j)})
			case 7:
				add(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval(j), eval(j)}})
			case 8:
				planJob := jobs[j].Copy()
				planJob.JobModifyIndex = uint64(pick("plan_version", len(logs)+1))
				req := &structs.ApplyPlanResultsRequest{Job: planJob, EvalID: evalIDs[pick("plan_eval", len(evalIDs))],
					UpdatedAt: int64(s), Evals: []*structs.Evaluation{eval(j)}}
				for k := pick("placed", 3); k > 0; k-- {
					a := mock.Alloc(jobs[j], nodes[pick("alloc_node", len(nodes))])
					a.ID, a.Job, a.EvalID = allocIDs[pick("alloc", len(allocIDs))], nil, req.EvalID
					req.AllocsUpdated = append(req.AllocsUpdated, a)
				}
				for k := pick("stopped", 2); k > 0; k-- {
					req.AllocsStopped = append(req.AllocsStopped, &structs.Allocation{ID: allocIDs[pick("stop", len(allocIDs))],
						DesiredStatus: structs.AllocDesiredStatusStop})
				}
				add(structs.ApplyPlanResultsRequestType, req)
			case 10:
				migrate := rapid.Bool().Draw(rt, "migrate")
				add(structs.AllocUpdateDesiredTransitionRequestType, &structs.AllocUpdateDesiredTransitionRequest{
					Allocs: map[string]*structs.DesiredTransition{
						allocIDs[pick("migrate_alloc", len(allocIDs))]:  {Migrate: &migrate},
						allocIDs[pick("migrate_alloc2", len(allocIDs))]: {Reschedule: &migrate}},
					Evals: []*structs.Evaluation{eval(j)}, UpdatedAt: int64(s)})
			case 9:
				if rapid.Bool().Draw(rt, "delete") {
					add(structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{Evals: []string{evalIDs[pick("del_eval", len(evalIDs))]},
						Allocs: []string{allocIDs[pick("del_alloc", len(allocIDs))]}})
				} else {
					add(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{
						Alloc: []*structs.Allocation{{ID: allocIDs[pick("upd", len(allocIDs))],
							ClientStatus: clientStatuses[pick("client_status", len(clientStatuses))], ModifyTime: int64(s)}},
						Evals: []*structs.Evaluation{eval(j)}})
				}
			}
		}

		want, wantHooks := testFSM(t)
		var wantResults []any
		for _, l := range logs {
			before, err := want.State().Snapshot()
			if err != nil {
				rt.Fatal(err)
			}
			res := want.Apply(l)
			wantResults = append(wantResults, res)
			if _, refused := res.(error); refused {
				if err := diffState(before.StateStore, want.State()); err != nil {
					rt.Fatalf("refused entry %d (%v) changed the state: %v", l.Index, res, err)
				}
			}
		}
		got, gotHooks := testFSM(t)
		var results []any
		for start := 0; start < len(logs); {
			end := min(len(logs), start+rapid.IntRange(1, 8).Draw(rt, "batch"))
			results = append(results, got.ApplyBatch(logs[start:end])...)
			start = end
		}
		if fmt.Sprint(results) != fmt.Sprint(wantResults) {
			rt.Fatalf("results\n%v\nwant\n%v", results, wantResults)
		}
		if g, w := gotHooks.take(), wantHooks.take(); fmt.Sprint(g) != fmt.Sprint(w) {
			rt.Fatalf("hooks\n%q\nwant\n%q", g, w)
		}
		if err := diffState(want.State(), got.State()); err != nil {
			rt.Fatal(err)
		}
	})
}
