package allocrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-project/drover/structs"
)

// TestNodeFaultClassification: failures that are the node's (a driver the
// node does not have, a task or allocation directory that cannot be made)
// carry a NodeFault kind on their task event and are reported to
// Config.NodeFault; the job's own failures (a missing command, a non-zero
// exit) are neither.
func TestNodeFaultClassification(t *testing.T) {
	tests := []struct {
		name      string
		task      *structs.Task
		prepare   func(t *testing.T, e *runnerEnv, a *structs.Allocation)
		wantEvent string // the failure's task event ("": none, the allocation fails before its tasks)
		wantKind  string // "" for the job's own failures
	}{
		{name: "missing command", task: &structs.Task{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/nonexistent/prog"}},
			wantEvent: structs.TaskDriverFailure},
		{name: "non-zero exit", task: rawExec("t", "exit 3"), wantEvent: structs.TaskTerminated},
		{name: "driver missing on the node", task: &structs.Task{Name: "t", Driver: "docker", Config: map[string]any{}},
			wantEvent: structs.TaskDriverFailure, wantKind: structs.NodeFaultDriverStart},
		{name: "task directory", task: rawExec("t", "exit 0"), wantEvent: structs.TaskSetupFailure, wantKind: structs.NodeFaultSetup,
			prepare: func(t *testing.T, e *runnerEnv, a *structs.Allocation) {
				// A file where the task's directory goes.
				dir := filepath.Join(e.root, a.ID)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "t"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "allocation directory", task: rawExec("t", "exit 0"), wantKind: structs.NodeFaultSetup,
			prepare: func(t *testing.T, e *runnerEnv, a *structs.Allocation) {
				if err := os.WriteFile(e.root, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a := testAlloc(structs.JobTypeBatch, failPolicy(0), tc.task)
			if tc.prepare != nil {
				tc.prepare(t, e, a)
			}
			ar := e.start(t, a, nil)
			<-ar.DoneCh()
			got := e.rec.waitFor(t, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
			if tc.wantEvent != "" {
				ev := findEvent(got.TaskStates.MustMap()["t"], tc.wantEvent)
				if ev == nil {
					t.Fatalf("no %s event: %s", tc.wantEvent, describe(got))
				}
				if ev.NodeFault != tc.wantKind {
					t.Fatalf("event %s NodeFault %q, want %q", ev.Type, ev.NodeFault, tc.wantKind)
				}
			}
			faults := e.faults.list()
			switch {
			case tc.wantKind == "" && len(faults) != 0:
				t.Fatalf("a job failure reported as node faults: %+v", faults[0])
			case tc.wantKind != "" && (len(faults) != 1 || faults[0].Kind != tc.wantKind || faults[0].AllocID != a.ID || faults[0].NodeID != "n1"):
				t.Fatalf("faults %v, want one %s fault of the allocation", faults, tc.wantKind)
			}
		})
	}
}
