package server

import (
	"strconv"

	"github.com/drover-project/drover/structs"
)

// Nomad's names for what a plan does to a group's allocations (a
// TaskGroupDiff's Updates) and what a change forces (annotations of a
// task diff and of a group's Count field).
const (
	updateIgnore      = "ignore"
	updateCreate      = "create"
	updateDestroy     = "destroy"
	updateMigrate     = "migrate"
	updateCanary      = "canary"
	updateInPlace     = "in-place update"
	updateDestructive = "create/destroy update"

	forcesCreate      = "forces create"
	forcesDestroy     = "forces destroy"
	forcesInPlace     = "forces in-place update"
	forcesDestructive = "forces create/destroy update"
)

// inPlaceTaskFields and inPlaceTaskObjects are the parts of a task whose
// change the scheduler applies in place (scheduler/update.go); a change
// of anything else replaces the allocation.
var (
	inPlaceTaskFields  = map[string]bool{"KillTimeout": true, "KillSignal": true, "Leader": true}
	inPlaceTaskObjects = map[string]bool{"Constraint": true}
)

// annotateDiff adds to a plan's diff (nil: none asked for) the counts of
// what the scheduler would do per group, whether a count change creates
// or destroys allocations, and what each task's change forces, as
// Nomad's plan does.
func annotateDiff(d *structs.JobDiff, ann *structs.PlanAnnotations) {
	if d == nil {
		return
	}
	for _, g := range d.TaskGroups {
		if ann != nil {
			if u := ann.DesiredTGUpdates[g.Name]; u != nil {
				g.Updates = map[string]uint64{}
				for name, n := range map[string]uint64{updateIgnore: u.Ignore, updateCreate: u.Place,
					updateDestroy: u.Stop, updateMigrate: u.Migrate, updateCanary: u.Canary,
					updateInPlace: u.InPlaceUpdate, updateDestructive: u.DestructiveUpdate} {
					if n != 0 {
						g.Updates[name] = n
					}
				}
			}
		}
		for _, f := range g.Fields {
			if f.Name != "Count" {
				continue
			}
			old, _ := strconv.Atoi(f.Old)
			new, _ := strconv.Atoi(f.New)
			switch {
			case new > old:
				f.Annotations = append(f.Annotations, forcesCreate)
			case new < old:
				f.Annotations = append(f.Annotations, forcesDestroy)
			}
		}
		for _, t := range g.Tasks {
			annotateTask(t, g)
		}
	}
}

func annotateTask(t *structs.TaskDiff, g *structs.TaskGroupDiff) {
	switch {
	case t.Type == structs.DiffTypeNone:
		return
	case t.Type == structs.DiffTypeAdded && g.Type == structs.DiffTypeAdded:
		t.Annotations = append(t.Annotations, forcesCreate)
		return
	case t.Type == structs.DiffTypeDeleted && g.Type == structs.DiffTypeDeleted:
		t.Annotations = append(t.Annotations, forcesDestroy)
		return
	}
	destructive := t.Type != structs.DiffTypeEdited
	for _, f := range t.Fields {
		destructive = destructive || !inPlaceTaskFields[f.Name]
	}
	for _, o := range t.Objects {
		destructive = destructive || !inPlaceTaskObjects[o.Name]
	}
	if destructive {
		t.Annotations = append(t.Annotations, forcesDestructive)
	} else {
		t.Annotations = append(t.Annotations, forcesInPlace)
	}
}
