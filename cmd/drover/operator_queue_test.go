package main

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

// The summary prints every figure, the reasons and bands in a fixed order,
// and the per-job and per-class tables when something waits.
func TestPrintQueue(t *testing.T) {
	e, out, _ := testEnv(nil)
	printQueue(e, &structs.QueueStatsResponse{
		Waiting: 3, Queued: 2, Blocked: 2, Placements: 17,
		WaitingByJob:             []*structs.QueueJobCount{{Namespace: "default", JobID: "web", Count: 3}},
		WaitingByClass:           map[string]int{"gpu": 2, "": 1},
		LongestWaitSeconds:       120.4,
		LongestWaitSecondsByBand: map[string]float64{"low": 120.4, "normal": 90, "high": 30},
		BlockedByReason:          map[string]int{"capacity": 1, "constraints": 1},
		BlockedCapacityByClass:   map[string]int{"gpu": 1},
	})
	want := `Placed, not started = 3
Not yet placed      = 2
Blocked evaluations = 2 (capacity 1, constraints 1)
Longest wait        = 2m0s (low 2m0s, normal 1m30s, high 30s)
Placements          = 17

Placed, not started, by job
Namespace  Job  Count
default    web  3

Placed, not started, by node class
Class   Count
<none>  1
gpu     2

Blocked on capacity, by node class
Class  Count
gpu    1
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}

	// An empty queue: the summary alone, every band and reason at zero.
	e, out, _ = testEnv(nil)
	printQueue(e, &structs.QueueStatsResponse{})
	if got := out.String(); !strings.Contains(got, "Blocked evaluations = 0 (capacity 0, constraints 0)") ||
		!strings.Contains(got, "Longest wait        = 0s (low 0s, normal 0s, high 0s)") || strings.Contains(got, "by job") {
		t.Fatalf("empty queue output:\n%s", got)
	}
}
