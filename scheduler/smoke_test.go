package scheduler

import (
	"testing"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

func TestSmoke(t *testing.T) {
	h := testHarness(t)
	mockNodes(t, h, 10)
	job := addJob(t, h, mock.Job())
	process(t, h, job, structs.EvalTriggerJobRegister)
	live, _ := jobAllocs(t, h, job)
	if len(live) != 10 {
		t.Fatalf("live = %d", len(live))
	}
	e := lastEval(t, h)
	t.Logf("%+v %v", e.Status, names(live))
}
