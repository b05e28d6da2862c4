package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestJobRegisterUnchangedSpec: registering the stored spec again, on the
// leader or through a follower, writes no new version (same Version and
// JobModifyIndex on every server, the stored JobModifyIndex in the reply)
// but still creates an evaluation, as Nomad does. A changed spec, and a
// stopped job run again, make a new version; repeating that is a no-op too.
func TestJobRegisterUnchangedSpec(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 10*time.Second)
	fol := follower(t, c)

	job := mock.Job()
	job.ID, job.Name = "same", "same"
	// Go-typed values the store holds as []any and int64: equal all the same.
	task := job.TaskGroups[0].Tasks[0]
	task.Driver = "docker" // a config with a list and an integer
	task.Config = map[string]any{"image": "busybox:1", "args": []string{"+%s", "--utc"}, "pids_limit": 3}

	register := func(s *server.Server, j *structs.Job) structs.JobRegisterResponse {
		t.Helper()
		var resp structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j.Copy()}, &resp); err != nil {
			t.Fatalf("register on %s: %v", s.RPCAddr(), err)
		}
		if resp.EvalID == "" || resp.EvalCreateIndex == 0 || resp.Index == 0 {
			t.Fatalf("register reply %+v", resp)
		}
		return resp
	}
	// stored checks the job on every server once it has applied index.
	stored := func(index, version, jobModifyIndex uint64) *structs.Job {
		t.Helper()
		var out *structs.Job
		for _, s := range c.Servers() {
			waitFor(t, 10*time.Second, func() string {
				if last, _ := s.State().LatestIndex(); last < index {
					return fmt.Sprintf("server %s applied up to %d, want %d", s.RPCAddr(), last, index)
				}
				return ""
			})
			got := getJob(t, s, job.ID, true, 0)
			if got.Job == nil || got.Job.Version != version || got.Job.JobModifyIndex != jobModifyIndex {
				t.Fatalf("server %s: job %+v, want version %d job modify index %d", s.RPCAddr(), got.Job, version, jobModifyIndex)
			}
			out = got.Job
		}
		return out
	}
	evalOf := func(id string, index uint64) *structs.Evaluation {
		t.Helper()
		var ev structs.SingleEvalResponse
		args := &structs.EvalSpecificRequest{EvalID: id}
		args.MinQueryIndex, args.MaxQueryTime = index-1, 5*time.Second
		if err := leader.RPC("Eval.GetEval", args, &ev); err != nil || ev.Eval == nil {
			t.Fatalf("eval %s: %+v, %v", id, ev.Eval, err)
		}
		return ev.Eval
	}

	first := register(leader, job)
	v0 := stored(first.Index, 0, first.JobModifyIndex)

	for _, s := range []*server.Server{leader, fol} {
		again := register(s, job)
		if again.JobModifyIndex != first.JobModifyIndex || again.EvalID == first.EvalID || again.Index <= first.Index {
			t.Fatalf("unchanged register via %s: reply %+v, first %+v", s.RPCAddr(), again, first)
		}
		got := stored(again.Index, 0, first.JobModifyIndex)
		if got.ModifyIndex != v0.ModifyIndex || got.SubmitTime != v0.SubmitTime {
			t.Fatalf("unchanged register rewrote the job: %+v, was %+v", got, v0)
		}
		if ev := evalOf(again.EvalID, again.Index); ev.JobModifyIndex != first.JobModifyIndex ||
			ev.TriggeredBy != structs.EvalTriggerJobRegister {
			t.Fatalf("unchanged register's eval %+v", ev)
		}
	}

	// EnforceIndex against the current index succeeds and writes nothing.
	var enforced structs.JobRegisterResponse
	if err := fol.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy(), EnforceIndex: true,
		JobModifyIndex: first.JobModifyIndex}, &enforced); err != nil || enforced.JobModifyIndex != first.JobModifyIndex {
		t.Fatalf("enforced unchanged register: %+v, %v", enforced, err)
	}

	changed := job.Copy()
	changed.TaskGroups[0].Tasks[0].Env["NEW"] = "1"
	second := register(fol, changed)
	if second.JobModifyIndex <= first.JobModifyIndex {
		t.Fatalf("changed spec kept job modify index %d", second.JobModifyIndex)
	}
	stored(second.Index, 1, second.JobModifyIndex)
	repeat := register(leader, changed)
	if repeat.JobModifyIndex != second.JobModifyIndex {
		t.Fatalf("repeated changed spec: job modify index %d, want %d", repeat.JobModifyIndex, second.JobModifyIndex)
	}
	stored(repeat.Index, 1, second.JobModifyIndex)

	// A stopped job run again with the same spec runs again.
	var dereg structs.JobDeregisterResponse
	if err := leader.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: job.ID}, &dereg); err != nil {
		t.Fatal(err)
	}
	stopped := getJob(t, leader, job.ID, false, 0).Job
	rerun := register(leader, changed)
	if rerun.JobModifyIndex <= dereg.Index {
		t.Fatalf("rerun of a stopped job: job modify index %d, stop at %d", rerun.JobModifyIndex, dereg.Index)
	}
	if got := stored(rerun.Index, stopped.Version+1, rerun.JobModifyIndex); got.Stop {
		t.Fatalf("rerun job still stopped: %+v", got)
	}
}
