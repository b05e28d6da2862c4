package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// TestRunJobFollowsAllocations: after the evaluation, job run follows the
// allocations it placed. The exit code depends on the job's type as in
// Nomad: a service job whose allocation failed or never started exits 1
// (Nomad's failed deployment), a batch or system job keeps 0 and says what
// it saw.
func TestRunJobFollowsAllocations(t *testing.T) {
	allocs := fixtureAllocs()
	pending := make([]*structs.Allocation, len(allocs))
	for i, a := range allocs {
		pending[i] = withStatus(a, "pending")
		pending[i].TaskStates = structs.TaskStates{}
	}
	restarting, failed := startFailureAllocs(allocs)
	stopped := withStatus(pending[0], "pending")
	stopped.DesiredStatus, stopped.DesiredDescription = "stop", "alloc not needed due to job update"
	cases := []struct {
		name    string
		typ     string
		allocs  []*structs.Allocation
		code    int
		want    []string
		notWant []string
	}{
		{name: "service running", typ: "service", allocs: allocs, code: exitOK,
			want: []string{"==> 3 of 3 allocations started"}},
		{name: "service failed", typ: "service", allocs: failed, code: exitError,
			want: []string{`Driver Failure: Failed to start task: fork/exec /bin/nope`, `status "failed" (Failed tasks)`,
				"==> 1 of 3 allocations failed; see drover alloc status a1a1a1a1"}},
		{name: "service never starts", typ: "service", allocs: pending, code: exitError,
			want: []string{"==> 3 of 3 allocations not started after 300ms; see drover job status web"}},
		{name: "batch could not start", typ: "batch", allocs: restarting, code: exitOK,
			want: []string{`Allocation "a1a1a1a1" task "server": Driver Failure: `,
				`Allocation "a1a1a1a1" could not start a task; the client retries it per the restart policy`,
				"==> 1 of 3 allocations could not start a task; see drover alloc status a1a1a1a1"},
			notWant: []string{"Not Restarting"}},
		{name: "batch never starts", typ: "batch", allocs: pending, code: exitOK,
			want: []string{"not started after 300ms"}},
		{name: "system stopped before it started", typ: "system",
			allocs: []*structs.Allocation{stopped, allocs[1], allocs[2]}, code: exitOK,
			want: []string{`Allocation "a1a1a1a1" desired status "stop" (alloc not needed due to job update)`,
				"==> 2 of 3 allocations started"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eval := &structs.Evaluation{ID: evalID, Namespace: "default", JobID: "web", Type: tc.typ, Status: "complete"}
			ts := fakeAgent(t, map[string]any{
				"GET /v1/evaluation/" + evalID:                  eval,
				"GET /v1/evaluation/" + evalID + "/allocations": stubs(pending),
				"GET /v1/job/web/allocations":                   sequence(20, stubs(pending), stubs(tc.allocs)),
			})
			e, out, errOut := testEnv(nil)
			job := fixtureJob()
			job.Type = tc.typ
			m := &evalMonitor{e: e, c: api.NewClient(ts.URL)}
			if code := m.runJob(context.Background(), evalID, job, 300*time.Millisecond); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out.String(), w) {
					t.Fatalf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestFailureEvent: the event job status shows for a task, or none.
func TestFailureEvent(t *testing.T) {
	ev := func(typ string, code int) *structs.TaskEvent { return &structs.TaskEvent{Type: typ, ExitCode: code} }
	cases := []struct {
		name string
		ts   *structs.TaskState
		want string // the event's type; "" for none
	}{
		{"no state", nil, ""},
		{"running after a failed start", &structs.TaskState{State: "running",
			Events: []*structs.TaskEvent{ev(structs.TaskDriverFailure, 0), ev(structs.TaskStarted, 0)}}, ""},
		{"restarting after a failed start", &structs.TaskState{State: "pending",
			Events: []*structs.TaskEvent{ev(structs.TaskDriverFailure, 0), ev(structs.TaskRestarting, 0)}}, structs.TaskDriverFailure},
		{"started, exited, restarting", &structs.TaskState{State: "pending",
			Events: []*structs.TaskEvent{ev(structs.TaskStarted, 0), ev(structs.TaskTerminated, 1), ev(structs.TaskRestarting, 0)}}, ""},
		{"dead after a failed start", &structs.TaskState{State: "dead", Failed: true,
			Events: []*structs.TaskEvent{ev(structs.TaskDriverFailure, 0), ev(structs.TaskNotRestarting, 0)}}, structs.TaskDriverFailure},
		{"failed with an exit code", &structs.TaskState{State: "dead", Failed: true,
			Events: []*structs.TaskEvent{ev(structs.TaskStarted, 0), ev(structs.TaskTerminated, 2), ev(structs.TaskNotRestarting, 0)}}, structs.TaskTerminated},
		{"template failure", &structs.TaskState{State: "pending",
			Events: []*structs.TaskEvent{ev(structs.TaskHookFailed, 0), ev(structs.TaskRestarting, 0)}}, structs.TaskHookFailed},
		{"setup failure", &structs.TaskState{State: "dead", Failed: true,
			Events: []*structs.TaskEvent{ev(structs.TaskSetupFailure, 0)}}, structs.TaskSetupFailure},
		{"completed", &structs.TaskState{State: "dead",
			Events: []*structs.TaskEvent{ev(structs.TaskStarted, 0), ev(structs.TaskTerminated, 0)}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if e := failureEvent(tc.ts); e != nil {
				got = e.Type
			}
			if got != tc.want {
				t.Fatalf("failureEvent = %q, want %q", got, tc.want)
			}
		})
	}
}
