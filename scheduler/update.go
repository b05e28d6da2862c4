package scheduler

import (
	"slices"

	"github.com/drover-project/drover/structs"
)

// needsDestructiveUpdate reports whether an allocation of group name,
// placed on node with job version old, must be stopped and placed again to
// run job version new. Only what placement depends on forces that: the set
// of tasks, a task's driver or resources, any constraint (job, group or
// task), or a datacenter change that leaves the node outside the job.
// Everything else (env, meta, task config, kill timeout, policies, ...) is
// updated in place: same node, same allocation ID, new job.
func needsDestructiveUpdate(old, new *structs.Job, name string, node *structs.Node) bool {
	a, b := old.LookupTaskGroup(name), new.LookupTaskGroup(name)
	if a == nil || b == nil {
		return true
	}
	if !slices.Equal(old.Datacenters, new.Datacenters) &&
		(node == nil || !inDatacenters(node.Datacenter, new.Datacenters)) {
		return true
	}
	if !constraintsEqual(old.Constraints, new.Constraints) || !constraintsEqual(a.Constraints, b.Constraints) {
		return true
	}
	if len(a.Tasks) != len(b.Tasks) {
		return true
	}
	for _, at := range a.Tasks {
		bt := findTask(b, at.Name)
		if bt == nil || at.Driver != bt.Driver || !resourcesEqual(at.Resources, bt.Resources) ||
			!constraintsEqual(at.Constraints, bt.Constraints) {
			return true
		}
	}
	return false
}

func findTask(tg *structs.TaskGroup, name string) *structs.Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func resourcesEqual(a, b *structs.Resources) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func constraintsEqual(a, b []*structs.Constraint) bool {
	return slices.EqualFunc(a, b, func(x, y *structs.Constraint) bool {
		if x == nil || y == nil {
			return x == y
		}
		return *x == *y
	})
}
