package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state"
	"github.com/drover-project/drover/structs"
)

func scaleStatus(t *testing.T, s *server.Server, id string) *structs.JobScaleStatus {
	t.Helper()
	var resp structs.JobScaleStatusResponse
	if err := s.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: id}, &resp); err != nil {
		t.Fatalf("scale status on %s: %v", s.RPCAddr(), err)
	}
	return resp.JobScaleStatus
}

// TestJobScale: a scaling request changes the group's count (a new
// version and an evaluation, on every server) and records an event; the
// scaling block's bounds hold at registration and at scale time; an
// error report records an event alone; bad requests are refused by code
// with nothing written.
func TestJobScale(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3, testcluster.WithStableLeader())
	leader := c.WaitForLeader(t, 15*time.Second)
	fol := follower(t, c)

	job := smallJob("scaled", 2)
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: 1, Max: 5, Enabled: true, Policy: map[string]any{"cooldown": "1m"}}
	tooMany := job.Copy()
	tooMany.TaskGroups[0].Count = 6
	var rr structs.JobRegisterResponse
	err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: tooMany}, &rr)
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("register above the scaling max: %v", err)
	}
	reg := submitJob(t, leader, job)
	group := job.TaskGroups[0].Name

	scale := func(s *server.Server, req structs.ScalingRequest) (structs.JobRegisterResponse, error) {
		var resp structs.JobRegisterResponse
		if req.JobID == "" {
			req.JobID = "scaled"
		}
		err := s.RPC("Job.Scale", &req, &resp)
		return resp, err
	}
	target := map[string]string{"Job": "scaled", "Group": group}
	four := int64(4)
	resp, err := scale(fol, structs.ScalingRequest{Target: target, Count: &four, Message: "more", Meta: map[string]any{"by": "test"}})
	if err != nil || resp.EvalID == "" || resp.JobModifyIndex <= reg.JobModifyIndex {
		t.Fatalf("scale to 4: %+v, %v", resp, err)
	}
	for _, s := range c.Servers() {
		waitFor(t, 10*time.Second, func() string {
			if idx, _ := s.State().LatestIndex(); idx < resp.Index {
				return fmt.Sprintf("server %s at %d", s.RPCAddr(), idx)
			}
			return ""
		})
		j, err := s.State().JobByID(nil, "default", "scaled")
		if err != nil || j.Version != 1 || j.TaskGroups[0].Count != 4 {
			t.Fatalf("server %s: job %+v, %v", s.RPCAddr(), j, err)
		}
		ev, err := s.State().EvalByID(nil, resp.EvalID)
		if err != nil || ev.TriggeredBy != structs.EvalTriggerScaling {
			t.Fatalf("server %s: eval %+v, %v", s.RPCAddr(), ev, err)
		}
		events, err := s.State().ScalingEventsByJob(nil, "default", "scaled")
		if err != nil || len(events.ScalingEvents[group]) != 1 {
			t.Fatalf("server %s: events %+v, %v", s.RPCAddr(), events, err)
		}
	}
	st := scaleStatus(t, fol, "scaled")
	g := st.TaskGroups[group]
	if st.JobStopped || st.JobModifyIndex != resp.JobModifyIndex || g.Desired != 4 || len(g.Events) != 1 {
		t.Fatalf("status %+v group %+v", st, g)
	}
	if e := g.Events[0]; *e.Count != 4 || e.PreviousCount != 2 || e.Message != "more" || *e.EvalID != resp.EvalID ||
		e.Meta["by"] != "test" || e.Time == 0 || e.CreateIndex != resp.Index {
		t.Fatalf("event %+v", e)
	}

	// An error report: an event, no evaluation, no new version.
	rep, err := scale(leader, structs.ScalingRequest{Target: target, Error: true, Message: "metrics unavailable"})
	if err != nil || rep.EvalID != "" {
		t.Fatalf("error report: %+v, %v", rep, err)
	}
	if g := scaleStatus(t, leader, "scaled").TaskGroups[group]; g.Desired != 4 || len(g.Events) != 2 || !g.Events[0].Error || g.Events[0].Count != nil {
		t.Fatalf("after the report: %+v", g)
	}

	six, zero, neg := int64(6), int64(0), int64(-1)
	for _, tc := range []struct {
		name string
		req  structs.ScalingRequest
		code structs.ErrorCode
	}{
		{"above max", structs.ScalingRequest{Target: target, Count: &six}, structs.ErrCodeInvalid},
		{"below min", structs.ScalingRequest{Target: target, Count: &zero}, structs.ErrCodeInvalid},
		{"negative", structs.ScalingRequest{Target: target, Count: &neg}, structs.ErrCodeInvalid},
		{"count with error", structs.ScalingRequest{Target: target, Count: &four, Error: true}, structs.ErrCodeInvalid},
		{"no group", structs.ScalingRequest{Target: map[string]string{"Job": "scaled"}, Count: &four}, structs.ErrCodeInvalid},
		{"unknown group", structs.ScalingRequest{Target: map[string]string{"Group": "nope"}, Count: &four}, structs.ErrCodeInvalid},
		{"other job in target", structs.ScalingRequest{Target: map[string]string{"Job": "x", "Group": group}, Count: &four}, structs.ErrCodeInvalid},
		{"unknown job", structs.ScalingRequest{JobID: "nope", Target: map[string]string{"Group": group}, Count: &four}, structs.ErrCodeNotFound},
		{"stale index", structs.ScalingRequest{Target: target, Count: &four, JobModifyIndex: reg.JobModifyIndex}, structs.ErrCodeConflict},
	} {
		// The tables a scaling request writes (the scheduler may still be
		// writing evaluations and summaries for the earlier scale).
		written := func() string {
			var out string
			for _, table := range []string{state.TableJobs, state.TableJobVersions, state.TableScalingEvents} {
				idx, _ := leader.State().Index(table)
				out += fmt.Sprintf("%s@%d ", table, idx)
			}
			return out
		}
		before := written()
		_, err := scale(fol, tc.req)
		if structs.CodeOf(err) != tc.code {
			t.Fatalf("%s: %v, want code %s", tc.name, err, tc.code)
		}
		if after := written(); after != before {
			t.Fatalf("%s: refused request wrote (%s-> %s)", tc.name, before, after)
		}
	}
	if g := scaleStatus(t, leader, "scaled").TaskGroups[group]; g.Desired != 4 || len(g.Events) != 2 {
		t.Fatalf("after refusals: %+v", g)
	}
	var missing structs.JobScaleStatusResponse
	if err := leader.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: "nope"}, &missing); err != nil || missing.JobScaleStatus != nil {
		t.Fatalf("status of a missing job: %+v, %v", missing.JobScaleStatus, err)
	}
}
