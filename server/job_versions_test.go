package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

func jobVersions(t *testing.T, s *server.Server, id string, diffs bool) structs.JobVersionsResponse {
	t.Helper()
	var resp structs.JobVersionsResponse
	if err := s.RPC("Job.GetJobVersions", &structs.JobVersionsRequest{JobID: id, Diffs: diffs}, &resp); err != nil {
		t.Fatalf("versions on %s: %v", s.RPCAddr(), err)
	}
	return resp
}

// TestJobVersionsRevertStable: each change keeps a version on every
// server; the versions read with diffs (through a follower too); Stable
// marks one; a revert registers an old version as a new one, refusing the
// current version, a version not kept and a stale EnforcePriorVersion by
// code; a purge drops them all.
func TestJobVersionsRevertStable(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 10*time.Second)
	fol := follower(t, c)

	job := smallJob("hist", 1)
	job.TaskGroups[0].Tasks[0].Env = nil
	submitJob(t, leader, job.Copy())
	v1 := job.Copy()
	v1.TaskGroups[0].Count = 2
	submitJob(t, leader, v1)
	v2 := v1.Copy()
	v2.TaskGroups[0].Tasks[0].Env = map[string]string{"MODE": "fast"}
	last := submitJob(t, leader, v2)

	for _, s := range c.Servers() {
		waitFor(t, 10*time.Second, func() string {
			if idx, _ := s.State().LatestIndex(); idx < last.Index {
				return fmt.Sprintf("server %s at %d", s.RPCAddr(), idx)
			}
			return ""
		})
		vs, err := s.State().JobVersionsByID(nil, "default", "hist")
		if err != nil || len(vs) != 3 || vs[0].Version != 2 || vs[2].Version != 0 {
			t.Fatalf("server %s versions %v, %v", s.RPCAddr(), vs, err)
		}
	}
	for _, s := range []*server.Server{leader, fol} {
		resp := jobVersions(t, s, "hist", true)
		if len(resp.Versions) != 3 || len(resp.Diffs) != 2 || resp.Index == 0 {
			t.Fatalf("versions via %s: %d versions %d diffs index %d", s.RPCAddr(), len(resp.Versions), len(resp.Diffs), resp.Index)
		}
		count := resp.Diffs[1].TaskGroups[0]
		if resp.Diffs[1].Type != structs.DiffTypeEdited || len(count.Fields) != 1 || count.Fields[0].Name != "Count" ||
			count.Fields[0].Old != "1" || count.Fields[0].New != "2" {
			t.Fatalf("v0->v1 diff: %+v", count)
		}
		env := resp.Diffs[0].TaskGroups[0].Tasks[0]
		if env.Type != structs.DiffTypeEdited || env.Fields[0].Name != "Env[MODE]" || env.Fields[0].Type != structs.DiffTypeAdded {
			t.Fatalf("v1->v2 diff: %+v", env)
		}
	}
	if resp := jobVersions(t, leader, "nope", false); len(resp.Versions) != 0 {
		t.Fatalf("unknown job has versions %+v", resp.Versions)
	}

	var stable structs.JobStabilityResponse
	if err := fol.RPC("Job.Stable", &structs.JobStabilityRequest{JobID: "hist", JobVersion: 1, Stable: true}, &stable); err != nil || stable.Index == 0 {
		t.Fatalf("stable: %+v, %v", stable, err)
	}
	if vs := jobVersions(t, leader, "hist", false).Versions; !vs[1].Stable || vs[0].Stable {
		t.Fatalf("stable flags: v2 %v v1 %v", vs[0].Stable, vs[1].Stable)
	}
	err := leader.RPC("Job.Stable", &structs.JobStabilityRequest{JobID: "hist", JobVersion: 9, Stable: true}, &stable)
	if structs.CodeOf(err) != structs.ErrCodeNotFound {
		t.Fatalf("stable of a missing version: %v", err)
	}

	revert := func(s *server.Server, version uint64, prior *uint64) (structs.JobRegisterResponse, error) {
		var resp structs.JobRegisterResponse
		err := s.RPC("Job.Revert", &structs.JobRevertRequest{JobID: "hist", JobVersion: version, EnforcePriorVersion: prior}, &resp)
		return resp, err
	}
	one, two := uint64(1), uint64(2)
	for _, tc := range []struct {
		version uint64
		prior   *uint64
		code    structs.ErrorCode
	}{
		{0, &one, structs.ErrCodeConflict},
		{2, nil, structs.ErrCodeInvalid},
		{9, nil, structs.ErrCodeNotFound},
	} {
		if _, err := revert(leader, tc.version, tc.prior); structs.CodeOf(err) != tc.code {
			t.Fatalf("revert to %d (prior %v): %v, want code %s", tc.version, tc.prior, err, tc.code)
		}
	}
	resp, err := revert(fol, 0, &two)
	if err != nil || resp.EvalID == "" {
		t.Fatalf("revert: %+v, %v", resp, err)
	}
	got := getJob(t, leader, "hist", false, resp.Index)
	if got.Job.Version != 3 || got.Job.TaskGroups[0].Count != 1 || got.Job.TaskGroups[0].Tasks[0].Env["MODE"] != "" || got.Job.Stable {
		t.Fatalf("reverted job: version %d count %d env %v stable %v", got.Job.Version, got.Job.TaskGroups[0].Count,
			got.Job.TaskGroups[0].Tasks[0].Env, got.Job.Stable)
	}

	var dereg structs.JobDeregisterResponse
	if err := leader.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "hist", Purge: true}, &dereg); err != nil {
		t.Fatal(err)
	}
	if vs := jobVersions(t, leader, "hist", false).Versions; len(vs) != 0 {
		t.Fatalf("purged job has %d versions", len(vs))
	}
}
