package server

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

// A plan from the wire with a null allocation stopped the leader's plan
// applier; Plan.Submit refuses it (found with the null-element probe of
// fsm.FuzzApply: the FSM refuses such an entry, but the applier reads the
// plan first).
func TestCheckPlanShape(t *testing.T) {
	ok := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{"n1": {{ID: "a"}}}}
	if err := checkPlanShape(ok); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		plan *structs.Plan
		want string
	}{
		{&structs.Plan{NodeAllocation: map[string][]*structs.Allocation{"n1": {{ID: "a"}, nil}}}, `Plan.NodeAllocation["n1"][1]: must not be null`},
		{&structs.Plan{NodeUpdate: map[string][]*structs.Allocation{"n2": {nil}}}, `Plan.NodeUpdate["n2"][0]: must not be null`},
		{&structs.Plan{Job: &structs.Job{TaskGroups: []*structs.TaskGroup{nil}}}, `TaskGroups[0]: must not be null`},
	}
	for _, tc := range cases {
		err := checkPlanShape(tc.plan)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("err = %v; want %q", err, tc.want)
		}
	}
}
