package server_test

import (
	"testing"
	"time"

	"github.com/drover-project/drover/state/mock"
	"github.com/drover-project/drover/structs"
)

// TestSchedulingEndToEnd: a registered job is placed by the server's own
// workers and its evaluation completes.
func TestSchedulingEndToEnd(t *testing.T) {
	s := schedServer(t, 2)
	for i := 0; i < 3; i++ {
		registerNode(t, s, mock.Node())
	}
	job := smallJob("web", 10)
	resp := submitJob(t, s, job)
	st := s.State()
	waitFor(t, 10*time.Second, func() string { return jobsPlaced(st, []*structs.Job{job}) })
	eval, err := st.EvalByID(nil, resp.EvalID)
	if err != nil {
		t.Fatal(err)
	}
	if eval.Status != structs.EvalStatusComplete {
		t.Fatalf("eval %s is %s", eval.ID, eval.Status)
	}
	checkPlacements(t, st)
}
