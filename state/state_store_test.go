package state

import (
	"errors"
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func testStore(t testing.TB) *StateStore {
	t.Helper()
	s, err := NewStateStore()
	if err != nil {
		t.Fatalf("NewStateStore: %v", err)
	}
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func wantIndex(t testing.TB, s *StateStore, table string, want uint64) {
	t.Helper()
	got, err := s.Index(table)
	must(t, err)
	if got != want {
		t.Errorf("index of %s = %d, want %d", table, got, want)
	}
}

func wantNotFound(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, structs.ErrNotFound) {
		t.Fatalf("got error %v, want one matching structs.ErrNotFound", err)
	}
}

func TestIndexTable(t *testing.T) {
	s := testStore(t)
	for _, table := range Tables {
		wantIndex(t, s, table, 0)
	}
	latest, err := s.LatestIndex()
	must(t, err)
	if latest != 0 {
		t.Fatalf("LatestIndex of empty store = %d", latest)
	}

	job := mock.Job()
	must(t, s.UpsertJob(5, job, mock.EvalFor(job)))
	must(t, s.UpsertNode(7, mock.Node(), nil))

	wantIndex(t, s, TableJobs, 5)
	wantIndex(t, s, TableJobSummary, 5)
	wantIndex(t, s, TableEvals, 5)
	wantIndex(t, s, TableJobVersions, 5)
	wantIndex(t, s, TableNodes, 7)
	wantIndex(t, s, TableAllocs, 0)
	latest, err = s.LatestIndex()
	must(t, err)
	if latest != 7 {
		t.Fatalf("LatestIndex = %d, want 7", latest)
	}
	entries, err := s.Indexes()
	must(t, err)
	if len(entries) != 5 {
		t.Fatalf("index rows = %d, want 5 (evals, job_summary, job_version, jobs, nodes): %+v", len(entries), entries)
	}
}

func TestSnapshotIsolation(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	snap, err := s.Snapshot()
	must(t, err)

	must(t, s.UpsertNode(2, mock.Node(), nil))
	must(t, s.DeregisterJob(3, job.Namespace, job.ID, true, 0, nil))

	if _, err := snap.JobByID(nil, job.Namespace, job.ID); err != nil {
		t.Fatalf("snapshot lost the job: %v", err)
	}
	nodes, err := snap.Nodes(nil)
	must(t, err)
	if len(nodes) != 0 {
		t.Fatalf("snapshot sees a later node")
	}
	wantIndex(t, snap.StateStore, TableNodes, 0)
	_, err = s.JobByID(nil, job.Namespace, job.ID)
	wantNotFound(t, err)
}

func TestAbandon(t *testing.T) {
	old, next := testStore(t), testStore(t)
	snap, err := old.Snapshot()
	must(t, err)
	select {
	case <-old.AbandonCh():
		t.Fatal("abandon channel closed early")
	default:
	}
	old.Abandon(next)
	old.Abandon(nil) // second call is a no-op
	for name, ch := range map[string]<-chan struct{}{"store": old.AbandonCh(), "snapshot": snap.AbandonCh()} {
		select {
		case <-ch:
		default:
			t.Errorf("%s: abandon channel not closed", name)
		}
	}
	if old.current() != next {
		t.Fatal("abandoned store does not lead to its replacement")
	}
	if next.current() != next {
		t.Fatal("live store is not its own current store")
	}
}

func TestNotFound(t *testing.T) {
	s := testStore(t)
	lookups := map[string]func() error{
		"job":         func() error { _, err := s.JobByID(nil, "", "nope"); return err },
		"job summary": func() error { _, err := s.JobSummary(nil, "", "nope"); return err },
		"node":        func() error { _, err := s.NodeByID(nil, "nope"); return err },
		"eval":        func() error { _, err := s.EvalByID(nil, "nope"); return err },
		"alloc":       func() error { _, err := s.AllocByID(nil, "nope"); return err },
		"deregister":  func() error { return s.DeregisterJob(1, "", "nope", false, 0, nil) },
		"node status": func() error { return s.UpdateNodeStatus(1, "nope", structs.NodeStatusDown, 0, nil, nil) },
		"delete node": func() error { return s.DeleteNodes(1, []string{"nope"}) },
		"eligibility": func() error {
			return s.UpdateNodeEligibility(1, &structs.NodeUpdateEligibilityRequest{NodeID: "nope", Eligibility: structs.NodeSchedulingEligible})
		},
		"drain": func() error { return s.UpdateNodeDrain(1, &structs.NodeUpdateDrainRequest{NodeID: "nope"}) },
	}
	for name, fn := range lookups {
		t.Run(name, func(t *testing.T) {
			wantNotFound(t, fn())
		})
	}
	latest, err := s.LatestIndex()
	must(t, err)
	if latest != 0 {
		t.Fatalf("a refused write moved the index to %d", latest)
	}
}
