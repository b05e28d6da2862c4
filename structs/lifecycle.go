package structs

// Task lifecycle hooks (Nomad's lifecycle block): when a task runs
// relative to its group's main tasks, the tasks without a lifecycle.
const (
	// TaskLifecycleHookPrestart tasks run before the main tasks start:
	// to completion, or, as sidecars, started and kept running alongside.
	TaskLifecycleHookPrestart = "prestart"
	// TaskLifecycleHookPoststart tasks start once every main task runs.
	TaskLifecycleHookPoststart = "poststart"
	// TaskLifecycleHookPoststop tasks run after the main tasks stopped.
	TaskLifecycleHookPoststop = "poststop"
)

// TaskLifecycleConfig is a task's lifecycle block.
type TaskLifecycleConfig struct {
	Hook string
	// Sidecar keeps a prestart or poststart task running for as long as
	// the main tasks run (it is stopped once they are all dead).
	Sidecar bool
}

// IsMain reports whether a task with this lifecycle is a main task (no
// lifecycle block, or one without a hook).
func (l *TaskLifecycleConfig) IsMain() bool { return l == nil || l.Hook == "" }

// IsSidecar reports whether the task is a sidecar of the main tasks.
func (l *TaskLifecycleConfig) IsSidecar() bool { return l != nil && l.Hook != "" && l.Sidecar }

// HookIs reports whether the lifecycle's hook is hook.
func (l *TaskLifecycleConfig) HookIs(hook string) bool { return l != nil && l.Hook == hook }

func (l *TaskLifecycleConfig) validate(v *validator, p string) {
	switch l.Hook {
	case TaskLifecycleHookPrestart, TaskLifecycleHookPoststart, TaskLifecycleHookPoststop:
	case "":
		v.add(join(p, "Lifecycle.Hook"), "a lifecycle block needs a hook: prestart, poststart or poststop")
	default:
		v.add(join(p, "Lifecycle.Hook"), "invalid lifecycle hook %q: must be prestart, poststart or poststop", l.Hook)
	}
}

// HasLifecycleTasks reports whether any task of the group has a lifecycle
// hook.
func (tg *TaskGroup) HasLifecycleTasks() bool {
	for _, t := range tg.Tasks {
		if t != nil && !t.Lifecycle.IsMain() {
			return true
		}
	}
	return false
}

// validateLifecycle refuses a group whose tasks all have lifecycle hooks
// (there is nothing for them to run around), as Nomad.
func (tg *TaskGroup) validateLifecycle(v *validator, p string) {
	if len(tg.Tasks) == 0 {
		return
	}
	for _, t := range tg.Tasks {
		if t == nil || t.Lifecycle.IsMain() {
			return
		}
	}
	v.add(join(p, "Tasks"), "a group needs at least one main task (a task without a lifecycle hook)")
}
