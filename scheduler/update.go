package scheduler

import (
	"maps"
	"reflect"

	"github.com/drover-project/drover/structs"
)

// An allocation of an older job version moves to the new one in one of two
// ways. An in-place update keeps it running: same node, same ID, the new
// job attached. A destructive update stops it and places a replacement,
// which starts the tasks again from the new job. The rule is Nomad's
// (its scheduler's tasksUpdated), over the fields Drover models: a change
// is destructive when the process could not be the same one afterwards,
// and that is decided by destructiveChange alone. Everything else is in
// place: count, priority, restart/reschedule/migrate policies, kill timeout
// and signal, leader, services and their checks (the client re-registers;
// Nomad replaces only for a Consul Connect change, which Drover refuses),
// and datacenters and constraints as long as the
// allocation's node still satisfies them (the schedulers check that, since
// they see the node).

// destructiveChange returns what differs between group's tasks in old and
// new such that an allocation of old must be replaced to run new, or ""
// when an in-place update will do:
//   - the group: it is gone, or its number of tasks or their names differ;
//   - a task's driver, user, driver config, env block, templates or
//     artifacts (any field of any of them, as Nomad compares them);
//   - the meta a task sees: the job's, group's and task's merged, since it
//     reaches the task as NOMAD_META_* (so a job-level meta change is
//     destructive too, unless every task overrides the key);
//   - a task's resources: cpu, cores, memory, memory_max, disk, its
//     legacy network; its logs block and volume mounts;
//   - the group's network block (ports are granted at placement), its
//     volumes and its ephemeral disk;
//   - the affinities (job, group or task) or spreads (job or group) that
//     apply to the group: they chose the node (Nomad replaces too).
func destructiveChange(old, new *structs.Job, group string) string {
	a, b := old.LookupTaskGroup(group), new.LookupTaskGroup(group)
	switch {
	case a == nil || b == nil:
		return "task group"
	case len(a.Tasks) != len(b.Tasks):
		return "number of tasks"
	case !networksEqual(a.Networks, b.Networks):
		return "network"
	case !listsEqual(groupAffinities(old, a), groupAffinities(new, b)):
		return "affinities"
	case !listsEqual(old.Spreads, new.Spreads) || !listsEqual(a.Spreads, b.Spreads):
		return "spreads"
	case !reflect.DeepEqual(a.Volumes, b.Volumes) && (len(a.Volumes) > 0 || len(b.Volumes) > 0):
		return "volumes"
	case !reflect.DeepEqual(a.EphemeralDisk, b.EphemeralDisk):
		return "ephemeral disk"
	}
	for _, at := range a.Tasks {
		bt := b.LookupTask(at.Name)
		if bt == nil {
			return "task " + at.Name + " removed"
		}
		if what := taskChange(at, bt); what != "" {
			return "task " + at.Name + " " + what
		}
		if !maps.Equal(old.CombinedTaskMeta(group, at.Name), new.CombinedTaskMeta(group, at.Name)) {
			return "task " + at.Name + " meta"
		}
	}
	return ""
}

// taskChange compares what a task is started with, meta aside.
func taskChange(a, b *structs.Task) string {
	switch {
	case a.Driver != b.Driver:
		return "driver"
	case a.User != b.User:
		return "user"
	case !configEqual(a.Config, b.Config):
		return "config"
	case !maps.Equal(a.Env, b.Env):
		return "env"
	case identityExposure(a.Identity) != identityExposure(b.Identity):
		return "identity"
	case !templatesEqual(a.Templates, b.Templates):
		return "templates"
	case !artifactsEqual(a.Artifacts, b.Artifacts):
		return "artifacts"
	case lifecycleOf(a.Lifecycle) != lifecycleOf(b.Lifecycle):
		return "lifecycle"
	case !reflect.DeepEqual(a.LogConfig, b.LogConfig):
		return "logs"
	case !reflect.DeepEqual(a.VolumeMounts, b.VolumeMounts) && (len(a.VolumeMounts) > 0 || len(b.VolumeMounts) > 0):
		return "volume mounts"
	}
	return resourcesChange(a.Resources, b.Resources)
}

// lifecycleOf is a task's lifecycle as a comparable value (nil: a main
// task).
func lifecycleOf(l *structs.TaskLifecycleConfig) structs.TaskLifecycleConfig {
	if l == nil {
		return structs.TaskLifecycleConfig{}
	}
	return *l
}

// identityExposure is how a task is handed its workload identity (the
// environment and the secrets file change with it).
func identityExposure(id *structs.WorkloadIdentity) [2]bool {
	if id == nil {
		return [2]bool{}
	}
	return [2]bool{id.Env, id.File}
}

// resourcesChange compares every resource Drover asks for; nil reads as
// zero.
func resourcesChange(a, b *structs.Resources) string {
	var x, y structs.Resources
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	switch {
	case x.CPU != y.CPU:
		return "cpu"
	case x.Cores != y.Cores:
		return "cores"
	case x.MemoryMB != y.MemoryMB:
		return "memory"
	case x.MemoryMaxMB != y.MemoryMaxMB:
		return "memory_max"
	case x.DiskMB != y.DiskMB:
		return "disk"
	case !networksEqual(x.Networks, y.Networks):
		return "network"
	}
	return ""
}

// templatesEqual compares two tasks' templates; nil and empty are equal.
func templatesEqual(a, b []*structs.Template) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// artifactsEqual compares two tasks' artifacts; nil and empty are equal.
func artifactsEqual(a, b []*structs.TaskArtifact) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// networksEqual compares two network lists; nil and empty are equal.
func networksEqual(a, b []*structs.NetworkResource) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// groupAffinities lists the affinities that apply to tg of j: the job's,
// the group's, then each task's in order.
func groupAffinities(j *structs.Job, tg *structs.TaskGroup) []*structs.Affinity {
	if len(j.Affinities) == 0 && len(tg.Affinities) == 0 && !taskAffinities(tg) {
		return nil
	}
	out := append(append([]*structs.Affinity(nil), j.Affinities...), tg.Affinities...)
	for _, t := range tg.Tasks {
		out = append(out, t.Affinities...)
	}
	return out
}

func taskAffinities(tg *structs.TaskGroup) bool {
	for _, t := range tg.Tasks {
		if len(t.Affinities) > 0 {
			return true
		}
	}
	return false
}

// listsEqual compares two lists deeply; nil and empty are equal.
func listsEqual[T any](a, b []T) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// configEqual compares two driver configs; nil and empty are equal.
func configEqual(a, b map[string]any) bool {
	return maps.EqualFunc(a, b, func(x, y any) bool { return reflect.DeepEqual(x, y) })
}
