package server

import (
	"fmt"
	"maps"
	"slices"

	"github.com/drover-project/drover/structs"
)

// checkPlanShape refuses a plan from the wire that holds a null
// allocation or task group: the leader's applier copies every allocation
// of a plan and would stop on a null one, and the FSM refuses the entry
// anyway (fsm.checkNulls). Plans from the servers' own workers have none.
func checkPlanShape(plan *structs.Plan) error {
	var errs []structs.FieldError
	for _, part := range []struct {
		name  string
		nodes map[string][]*structs.Allocation
	}{{"NodeUpdate", plan.NodeUpdate}, {"NodeAllocation", plan.NodeAllocation}, {"NodePreemptions", plan.NodePreemptions}} {
		for _, node := range slices.Sorted(maps.Keys(part.nodes)) {
			for i, a := range part.nodes[node] {
				if a == nil {
					errs = append(errs, structs.FieldError{Field: fmt.Sprintf("Plan.%s[%q][%d]", part.name, node, i), Message: "must not be null"})
				}
			}
		}
	}
	if plan.Job != nil {
		if err := checkJobShape(plan.Job); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return &structs.ValidationError{Errors: errs}
	}
	return nil
}
