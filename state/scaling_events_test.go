package state

import (
	"testing"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

func TestScalingEvents(t *testing.T) {
	s := testStore(t)
	job := mock.Job()
	must(t, s.UpsertJob(1, job, nil))
	group := job.TaskGroups[0].Name

	// A count change: a new version, its evaluation and the event in one
	// entry.
	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 5
	eval := mock.EvalFor(scaled)
	count := int64(5)
	must(t, s.UpsertScalingEvent(2, &structs.ScalingEventRegisterRequest{JobID: job.ID, TaskGroup: group,
		Job: scaled, Eval: eval, Event: &structs.ScalingEvent{Count: &count, PreviousCount: 1, Message: "up", EvalID: &eval.ID},
		WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}))
	cur, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	if cur.Version != 1 || cur.TaskGroups[0].Count != 5 {
		t.Fatalf("scaled job: version %d count %d", cur.Version, cur.TaskGroups[0].Count)
	}
	if _, err := s.EvalByID(nil, eval.ID); err != nil {
		t.Fatalf("scaling eval: %v", err)
	}
	// Events alone, beyond the limit: newest first, the oldest dropped.
	for i := uint64(3); i < 3+structs.JobTrackedScalingEvents; i++ {
		must(t, s.UpsertScalingEvent(i, &structs.ScalingEventRegisterRequest{JobID: job.ID, TaskGroup: group,
			Event: &structs.ScalingEvent{Message: "report", Error: true}, WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}))
	}
	row, err := s.ScalingEventsByJob(nil, job.Namespace, job.ID)
	must(t, err)
	events := row.ScalingEvents[group]
	last := uint64(2 + structs.JobTrackedScalingEvents)
	if len(events) != structs.JobTrackedScalingEvents || events[0].CreateIndex != last || events[len(events)-1].Message != "report" ||
		row.ModifyIndex != last {
		t.Fatalf("%d events, newest at %d, oldest %q, row at %d", len(events), events[0].CreateIndex, events[len(events)-1].Message, row.ModifyIndex)
	}
	wantIndex(t, s, TableScalingEvents, last)

	must(t, s.DeregisterJob(100, job.Namespace, job.ID, true, 0, nil))
	_, err = s.ScalingEventsByJob(nil, job.Namespace, job.ID)
	wantNotFound(t, err)
}
