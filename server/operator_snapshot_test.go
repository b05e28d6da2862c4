package server_test

import (
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
	var resp structs.GenericResponse
	err := follower(t, c).RPC("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Archive: damaged}, &resp)
	if structs.CodeOf(err) != structs.ErrCodeInvalid {
		t.Fatalf("damaged archive: err = %v, want code invalid", err)
	}
	if got := localJobIDs(t, leader); len(got) != 3 || got[0] != "b" {
		t.Fatalf("state changed by a refused restore: %v", got)
	}

	// The real archive, restored through a follower, reaches every server.
	if err := follower(t, c).RPC("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Archive: saved.Archive}, &resp); err != nil {
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
