package server_test

import (
	"testing"
	"time"

	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// BenchmarkLeaderChecks measures what a leader's answers from local state
// cost on a 3-server cluster over loopback TCP (in-process calls on the
// leader, 8 callers per core): a consistent read of a job (verified by a
// batched raft.VerifyLeader), the same read with ?stale (no check), and
// a deregister refused as not found (verified after the refusal,
// leader_check.go).
//
//	go test -run '^$' -bench BenchmarkLeaderChecks -benchmem ./server
func BenchmarkLeaderChecks(b *testing.B) {
	c := testcluster.NewTestCluster(b, 3)
	leader := c.WaitForLeader(b, 10*time.Second)
	job := mock.Job()
	if err := leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}); err != nil {
		b.Fatal(err)
	}
	read := func(stale bool) func(*testing.PB) {
		return func(pb *testing.PB) {
			for pb.Next() {
				args := &structs.JobSpecificRequest{JobID: job.ID}
				args.AllowStale = stale
				var resp structs.SingleJobResponse
				if err := leader.RPC("Job.GetJob", args, &resp); err != nil || resp.Job == nil {
					b.Fatalf("read: %v", err)
				}
			}
		}
	}
	b.Run("ConsistentRead", func(b *testing.B) {
		b.SetParallelism(8)
		b.ReportAllocs()
		b.RunParallel(read(false))
	})
	b.Run("StaleRead", func(b *testing.B) {
		b.SetParallelism(8)
		b.ReportAllocs()
		b.RunParallel(read(true))
	})
	b.Run("RefusedDeregister", func(b *testing.B) {
		b.SetParallelism(8)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				err := leader.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "missing"}, &structs.JobDeregisterResponse{})
				if structs.CodeOf(err) != structs.ErrCodeNotFound {
					b.Fatalf("deregister: %v", err)
				}
			}
		})
	})
}
