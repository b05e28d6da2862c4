package state

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func versionsOf(t testing.TB, s *StateStore, job *structs.Job) []uint64 {
	t.Helper()
	all, err := s.JobVersionsByID(nil, job.Namespace, job.ID)
	must(t, err)
	var out []uint64
	for _, j := range all {
		out = append(out, j.Version)
	}
	return out
}

// registerVersion registers a changed copy of job at index.
func registerVersion(t testing.TB, s *StateStore, index uint64, job *structs.Job) {
	t.Helper()
	j := job.Copy()
	j.Meta = map[string]string{"v": strconv.FormatUint(index, 10)}
	must(t, s.UpsertJob(index, j, nil))
}

func TestJobVersionsKeptAndTrimmed(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	for i := uint64(1); i <= 9; i++ {
		registerVersion(t, s, i, job)
	}
	if got, want := versionsOf(t, s, job), []uint64{8, 7, 6, 5, 4, 3}; !slices.Equal(got, want) {
		t.Fatalf("versions = %v, want %v", got, want)
	}
	wantIndex(t, s, TableJobVersions, 9)
	cur, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	v, err := s.JobByIDAndVersion(nil, job.Namespace, job.ID, 8)
	must(t, err)
	if v != cur {
		t.Fatal("the current version's row is not the jobs table's object")
	}
	_, err = s.JobByIDAndVersion(nil, job.Namespace, job.ID, 2)
	wantNotFound(t, err)
}

func TestJobVersionsConfiguredLimit(t *testing.T) {
	s, err := NewStateStore(WithJobTrackedVersions(2))
	must(t, err)
	job := mock.Job()
	for i := uint64(1); i <= 4; i++ {
		registerVersion(t, s, i, job)
	}
	if got, want := versionsOf(t, s, job), []uint64{3, 2}; !slices.Equal(got, want) {
		t.Fatalf("versions = %v, want %v", got, want)
	}
	snap, err := s.Snapshot()
	must(t, err)
	if snap.JobTrackedVersions() != 2 {
		t.Fatal("snapshot lost the limit")
	}
}

// The newest stable version survives trimming in place of the oldest
// unstable one, as in Nomad.
func TestJobVersionsKeepNewestStable(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	registerVersion(t, s, 1, job) // version 0
	must(t, s.UpdateJobStability(2, job.Namespace, job.ID, 0, true))
	for i := uint64(3); i <= 10; i++ {
		registerVersion(t, s, i, job) // versions 1..8
	}
	if got, want := versionsOf(t, s, job), []uint64{8, 7, 6, 5, 4, 0}; !slices.Equal(got, want) {
		t.Fatalf("versions = %v, want %v", got, want)
	}
}

func TestJobStability(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	registerVersion(t, s, 1, job)
	registerVersion(t, s, 2, job)

	ws := memdb.NewWatchSet()
	_, err := s.JobVersionsByID(ws, job.Namespace, job.ID)
	must(t, err)
	// An older version: its row only.
	must(t, s.UpdateJobStability(3, job.Namespace, job.ID, 0, true))
	if ws.Watch(time.After(5 * time.Second)) {
		t.Fatal("the versions read was not woken")
	}
	v0, err := s.JobByIDAndVersion(nil, job.Namespace, job.ID, 0)
	must(t, err)
	cur, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	if !v0.Stable || cur.Stable || cur.ModifyIndex != 2 {
		t.Fatalf("v0 stable %v, current stable %v at %d", v0.Stable, cur.Stable, cur.ModifyIndex)
	}
	// The current version: the job too, same version and JobModifyIndex.
	must(t, s.UpdateJobStability(4, job.Namespace, job.ID, 1, true))
	cur, err = s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	v1, err := s.JobByIDAndVersion(nil, job.Namespace, job.ID, 1)
	must(t, err)
	if !cur.Stable || cur != v1 || cur.Version != 1 || cur.JobModifyIndex != 2 || cur.ModifyIndex != 4 {
		t.Fatalf("current = stable %v version %d jmi %d mi %d", cur.Stable, cur.Version, cur.JobModifyIndex, cur.ModifyIndex)
	}
	wantNotFound(t, s.UpdateJobStability(5, job.Namespace, job.ID, 7, true))
}

func TestJobVersionsStopAndPurge(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	registerVersion(t, s, 1, job)
	must(t, s.DeregisterJob(2, job.Namespace, job.ID, false, 0, nil))
	all, err := s.JobVersionsByID(nil, job.Namespace, job.ID)
	must(t, err)
	if len(all) != 2 || !all[0].Stop || all[0].Version != 1 || all[1].Stop {
		t.Fatalf("versions after stop: %+v", all)
	}
	must(t, s.DeregisterJob(3, job.Namespace, job.ID, true, 0, nil))
	if got := versionsOf(t, s, job); len(got) != 0 {
		t.Fatalf("versions after purge: %v", got)
	}
	wantIndex(t, s, TableJobVersions, 3)
}

// A status change copies the job; the version row follows it.
func TestJobVersionFollowsStatus(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, mock.EvalFor(job)))
	cur, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	v, err := s.JobByIDAndVersion(nil, job.Namespace, job.ID, cur.Version)
	must(t, err)
	if v != cur {
		t.Fatalf("version row %p (status %s) is not the job %p (status %s)", v, v.Status, cur, cur.Status)
	}
}
