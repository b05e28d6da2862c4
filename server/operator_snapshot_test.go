package server_test

import (
	"bytes"
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/server"
	"github.com/drover-project/drover/server/testcluster"
	"github.com/drover-project/drover/structs"
)

// localJobIDs lists the jobs in one server's local state.
func localJobIDs(t testing.TB, s *server.Server) []string {
	t.Helper()
	jobs, err := s.State().Jobs(nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(jobs))
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	sort.Strings(ids)
	return ids
}

func TestOperatorSnapshotSaveRestoreConverges(t *testing.T) {
	c := testcluster.NewTestCluster(t, 3)
	leader := c.WaitForLeader(t, 10*time.Second)
	for _, id := range []string{"a", "b", "c"} {
		registerJob(t, leader, id)
	}
	var saved structs.SnapshotSaveResponse
	if err := follower(t, c).RPC("Operator.SnapshotSave", &structs.GenericRequest{}, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Archive) == 0 || saved.Index == 0 {
		t.Fatalf("empty snapshot: %d bytes at index %d", len(saved.Archive), saved.Index)
	}

	// Change the state after the snapshot: one job more, one purged.
	registerJob(t, leader, "d")
	var dereg structs.JobDeregisterResponse
	if err := leader.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "a", Purge: true}, &dereg); err != nil {
		t.Fatal(err)
	}

	// A damaged archive is refused and changes nothing.
	damaged := append([]byte(nil), saved.Archive...)
	damaged[len(damaged)/2] ^= 0xff
	_, err := server.RestoreSnapshot(follower(t, c).RPC, bytes.NewReader(damaged), structs.WriteRequest{})
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("damaged archive: err = %v, want code invalid", err)
	}
	if got := localJobIDs(t, leader); len(got) != 3 || got[0] != "b" {
		t.Fatalf("state changed by a refused restore: %v", got)
	}

	// The real archive, restored through a follower, reaches every server.
	if _, err := server.RestoreSnapshot(follower(t, c).RPC, bytes.NewReader(saved.Archive), structs.WriteRequest{}); err != nil {
		t.Fatal(err)
	}
	want := "[a b c]"
	waitFor(t, 15*time.Second, func() string {
		for _, s := range c.Servers() {
			if got := localJobIDs(t, s); fmtIDs(got) != want {
				return s.RPCAddr() + " has " + fmtIDs(got)
			}
		}
		return ""
	})
	// The cluster keeps taking writes after the restore.
	registerJob(t, c.WaitForLeader(t, 10*time.Second), "e")
}

func fmtIDs(ids []string) string {
	out := "["
	for i, id := range ids {
		if i > 0 {
			out += " "
		}
		out += id
	}
	return out + "]"
}

// After a restore the leader's broker holds exactly the restored state's
// pending evaluations: one written after the snapshot is gone with it.
func TestSnapshotRestoreRestartsLeaderComponents(t *testing.T) {
	s := schedServer(t, -1) // no workers: evaluations stay in the broker
	_, reg := registerJob(t, s, "web")
	var saved structs.SnapshotSaveResponse
	if err := s.RPC("Operator.SnapshotSave", &structs.GenericRequest{}, &saved); err != nil {
		t.Fatal(err)
	}
	var dereg structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "web", Purge: true}, &dereg); err != nil {
		t.Fatal(err)
	}
	if _, err := server.RestoreSnapshot(s.RPC, bytes.NewReader(saved.Archive), structs.WriteRequest{}); err != nil {
		t.Fatal(err)
	}
	dequeue := func(timeout time.Duration) *structs.EvalDequeueResponse {
		var out structs.EvalDequeueResponse
		args := &structs.EvalDequeueRequest{Schedulers: []string{structs.JobTypeService}, Timeout: timeout}
		if err := s.RPC("Eval.Dequeue", args, &out); err != nil {
			t.Fatal(err)
		}
		return &out
	}
	var got *structs.EvalDequeueResponse
	waitFor(t, 10*time.Second, func() string {
		got = dequeue(200 * time.Millisecond)
		if got.Eval == nil {
			return "no evaluation in the broker after the restore"
		}
		return ""
	})
	if got.Eval.ID != reg.EvalID {
		t.Fatalf("dequeued eval %s (%s), want the restored registration eval %s", got.Eval.ID, got.Eval.TriggeredBy, reg.EvalID)
	}
	if err := s.RPC("Eval.Ack", &structs.EvalAckRequest{EvalID: got.Eval.ID, Token: got.Token}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if next := dequeue(300 * time.Millisecond); next.Eval != nil {
		t.Fatalf("broker still holds eval %s (%s), which the restore removed", next.Eval.ID, next.Eval.TriggeredBy)
	}
}
