package jobspec

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// Nomad's documented defaults, written out here rather than taken from
// structs, so that the corpus is compared with what Nomad means and not
// with what Drover already does.

// nomadRestart is the restart block a group gets in Nomad: two attempts in
// 30 minutes for service and system jobs, three in 24 hours for batch
// jobs, 15s apart, then fail.
func nomadRestart(jobType string) *structs.RestartPolicy {
	if jobType == structs.JobTypeBatch || jobType == structs.JobTypeSysBatch {
		return &structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
	}
	return &structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}
}

// nomadReschedule is the reschedule block a group gets in Nomad: unlimited
// with an exponential delay from 30s up to 1h for service jobs, one
// attempt a day 5s later for batch jobs. System and sysbatch jobs are never
// rescheduled (Nomad leaves the policy out; Drover writes an empty one,
// which means the same).
func nomadReschedule(jobType string) *structs.ReschedulePolicy {
	switch jobType {
	case structs.JobTypeBatch:
		return &structs.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	case structs.JobTypeSystem, structs.JobTypeSysBatch:
		return &structs.ReschedulePolicy{}
	}
	return &structs.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}
}

// nomadMigrate is the migrate block of a service group in Nomad; batch and
// system groups have none.
func nomadMigrate(jobType string) *structs.MigrateStrategy {
	if jobType != structs.JobTypeService {
		return nil
	}
	return &structs.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
}

// nomadUpdate is an update block with Nomad's defaults (stagger 30s,
// max_parallel 1, health_check "checks", min_healthy_time 10s,
// healthy_deadline 5m, progress_deadline 10m, no auto revert or promote,
// no canary), changed by set.
func nomadUpdate(set func(u *structs.UpdateStrategy)) *structs.UpdateStrategy {
	u := &structs.UpdateStrategy{Stagger: 30 * time.Second, MaxParallel: 1, HealthCheck: "checks",
		MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute}
	set(u)
	return u
}

// nomadJob is a job with Nomad's job-level defaults: region "global",
// namespace "default", priority 50, name = ID, datacenters ["*"].
func nomadJob(id, jobType string, groups ...*structs.TaskGroup) *structs.Job {
	for _, tg := range groups {
		if tg.RestartPolicy == nil {
			tg.RestartPolicy = nomadRestart(jobType)
		}
		if tg.ReschedulePolicy == nil {
			tg.ReschedulePolicy = nomadReschedule(jobType)
		}
		if tg.Migrate == nil {
			tg.Migrate = nomadMigrate(jobType)
		}
	}
	return &structs.Job{Region: "global", Namespace: "default", ID: id, Name: id, Type: jobType,
		Priority: 50, Datacenters: []string{"*"}, NodePool: "default", TaskGroups: groups}
}

// nomadGroup is a group of count tasks (Nomad's default count is 1).
func nomadGroup(name string, count int, tasks ...*structs.Task) *structs.TaskGroup {
	return &structs.TaskGroup{Name: name, Count: count, Tasks: tasks}
}

// nomadTask is a task with Nomad's defaults: kill_timeout 5s and, without
// a resources block, 100 MHz and 300 MB.
func nomadTask(name, driver string, config map[string]any) *structs.Task {
	return &structs.Task{Name: name, Driver: driver, Config: config, KillTimeout: 5 * time.Second,
		Resources: &structs.Resources{CPU: 100, MemoryMB: 300}}
}

func withResources(t *structs.Task, cpu, memoryMB int) *structs.Task {
	t.Resources = &structs.Resources{CPU: cpu, MemoryMB: memoryMB}
	return t
}

// linux is the constraint most of Nomad's e2e jobs carry; the operator
// defaults to "=".
func linux() *structs.Constraint {
	return &structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}
}

func args(a ...any) []any { return a }

// nomadTemplate is a template block with Nomad's defaults: splay 5s,
// perms "0644", delimiters {{ and }}.
func nomadTemplate(data, dest, changeMode string) *structs.Template {
	return &structs.Template{EmbeddedTmpl: data, DestPath: dest, ChangeMode: changeMode,
		Splay: 5 * time.Second, Perms: "0644", LeftDelim: "{{", RightDelim: "}}"}
}

// nomadArtifact is an artifact block as Nomad's server stores it: mode
// any unless given, not insecure, no options or headers.
func nomadArtifact(source, dest, mode string) *structs.TaskArtifact {
	return &structs.TaskArtifact{GetterSource: source, RelativeDest: dest, GetterMode: mode}
}

// artifactTask is a task of Nomad's e2e artifact jobs: one artifact, a
// cat of what it fetched (raw_exec and exec) or a bash image running cat
// (docker), 16 MHz, 32 MB and the disk asked for.
func artifactTask(name, driver string, a *structs.TaskArtifact, file string, disk int) *structs.Task {
	cfg := map[string]any{"command": "cat", "args": args(file)}
	if driver == "docker" {
		cfg = map[string]any{"image": "bash:5", "args": args("cat", file)}
	}
	t := nomadTask(name, driver, cfg)
	t.Resources = &structs.Resources{CPU: 16, MemoryMB: 32, DiskMB: disk}
	t.Artifacts = []*structs.TaskArtifact{a}
	return t
}

// TestNomadCorpusMeaning checks, field by field, that accepted corpus files
// mean what they mean in Nomad once defaults are applied. Each expected
// job is written from reading the file and Nomad's documentation.
func TestNomadCorpusMeaning(t *testing.T) {
	cases := map[string]func() *structs.Job{
		"e2e-deployment-auto0": func() *structs.Job {
			// Two groups, each with its own update block over the defaults.
			one := nomadGroup("one", 3, withResources(nomadTask("one", "raw_exec", map[string]any{
				"command": "/bin/sleep", "args": args("1000000")}), 20, 20))
			one.Update = nomadUpdate(func(u *structs.UpdateStrategy) { u.MaxParallel, u.AutoPromote, u.Canary = 3, true, 2 })
			two := nomadGroup("two", 3, withResources(nomadTask("two", "raw_exec", map[string]any{
				"command": "/bin/sleep", "args": args("2000000")}), 20, 20))
			two.Update = nomadUpdate(func(u *structs.UpdateStrategy) {
				u.MaxParallel, u.AutoPromote, u.Canary, u.MinHealthyTime = 2, true, 2, 2*time.Second
			})
			j := nomadJob("deployment_auto.nomad", "service", one, two)
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-rescheduling-canary": func() *structs.Job {
			g := nomadGroup("t5", 3, nomadTask("t5", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "sleep 5000")}))
			g.Update = nomadUpdate(func(u *structs.UpdateStrategy) { u.Canary, u.MinHealthyTime = 1, time.Second })
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 30 * time.Minute, Delay: 0, Mode: "fail"}
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 3, Interval: 5 * time.Minute, Delay: 5 * time.Second,
				DelayFunction: "exponential", MaxDelay: time.Hour}
			j := nomadJob("test5", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-rescheduling-default": func() *structs.Job {
			g := nomadGroup("t", 3, nomadTask("t", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "lol 5000")}))
			// restart sets attempts, delay and mode; interval keeps the default.
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 30 * time.Minute, Delay: 0, Mode: "fail"}
			j := nomadJob("test", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-system-all-pools": func() *structs.Job {
			// A system job in every node pool; restart sets every field.
			g := nomadGroup("system_job_group", 1, nomadTask("system_task", "docker",
				map[string]any{"image": "busybox:1", "command": "/bin/sh", "args": args("-c", "sleep 15000")}))
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 10, Interval: time.Minute, Delay: 2 * time.Second, Mode: "delay"}
			j := nomadJob("system_job", "system", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.NodePool = "all"
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-sysbatch-fast": func() *structs.Job {
			// sysbatch: batch restart defaults, no rescheduling, no migrate.
			j := nomadJob("sysbatchjob", "sysbatch", nomadGroup("sysbatch_job_group", 1, nomadTask("sysbatch_task", "docker",
				map[string]any{"image": "busybox:1", "command": "/bin/sh", "args": args("-c", "echo hi; sleep 1")})))
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-lifecycle-batch": func() *structs.Job {
			// Three docker tasks, each with a script template: a prestart
			// task, the main task and a poststart task.
			task := func(name, script, data, hook string) *structs.Task {
				t := withResources(nomadTask(name, "docker", map[string]any{
					"image": "busybox:1", "command": "/bin/sh", "args": args("local/" + script)}), 64, 64)
				t.Templates = []*structs.Template{nomadTemplate(data, "local/"+script, "restart")}
				if hook != "" {
					t.Lifecycle = &structs.TaskLifecycleConfig{Hook: hook}
				}
				return t
			}
			j := nomadJob("batch-lifecycle", "batch", nomadGroup("test", 1,
				task("init", "prestart.sh", "#!/bin/sh\nsleep 1\ntouch ${NOMAD_ALLOC_DIR}/init-ran\ntouch ${NOMAD_ALLOC_DIR}/init-running\nsleep 5\nif [ -f ${NOMAD_ALLOC_DIR}/main ]; then exit 7; fi\nif [ -f ${NOMAD_ALLOC_DIR}/poststart-running ]; then exit 8; fi\nrm ${NOMAD_ALLOC_DIR}/init-running\n", "prestart"),
				task("main", "main.sh", "#!/bin/sh\nsleep 1\ntouch ${NOMAD_ALLOC_DIR}/main-running\ntouch ${NOMAD_ALLOC_DIR}/main-started\n# NEED TO HANG AROUND TO GIVE POSTSTART TIME TO GET STARTED\nsleep 10\nif [ ! -f ${NOMAD_ALLOC_DIR}/init-ran ]; then exit 9; fi\nif [ -f ${NOMAD_ALLOC_DIR}/init-running ]; then exit 10; fi\n\nif [ ! -f ${NOMAD_ALLOC_DIR}/poststart-started ]; then exit 11; fi\n\ntouch ${NOMAD_ALLOC_DIR}/main-ran\nrm ${NOMAD_ALLOC_DIR}/main-running\n", ""),
				task("poststart", "poststart.sh", "#!/bin/sh\nsleep 1\ntouch ${NOMAD_ALLOC_DIR}/poststart-ran\ntouch ${NOMAD_ALLOC_DIR}/poststart-running\ntouch ${NOMAD_ALLOC_DIR}/poststart-started\nsleep 10\n# THIS IS WHERE THE ACTUAL TESTING HAPPENS\n# IF init-ran doesn't exist, then the init task hasn't run yet, so fail\nif [ ! -f ${NOMAD_ALLOC_DIR}/init-ran ]; then exit 12; fi\nif [ ! -f ${NOMAD_ALLOC_DIR}/main-started ]; then exit 15; fi\nif [ -f ${NOMAD_ALLOC_DIR}/init-running ]; then exit 14; fi\nrm ${NOMAD_ALLOC_DIR}/poststart-running\n", "poststart")))
			j.Datacenters = []string{"dc1"}
			return j
		},
		"e2e-rescheduling-fail": func() *structs.Job {
			g := nomadGroup("t2", 3, nomadTask("t2", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "lol 5000")}))
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 30 * time.Minute, Delay: 0, Mode: "fail"}
			// attempts, interval and unlimited set; delay, delay_function
			// and max_delay keep the service defaults.
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 2, Interval: 5 * time.Minute,
				Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: false}
			j := nomadJob("test2", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-rescheduling-success": func() *structs.Job {
			g := nomadGroup("t3", 3, nomadTask("t3", "raw_exec", map[string]any{
				"command": "bash",
				// ${NOMAD_ALLOC_ID} is left for the client.
				"args": args("-c", "a=`cksum <<< \"${NOMAD_ALLOC_ID}\"| cut -d ' ' -f1`; if ! (( a % 2 )); then sleep 5000; else exit -1; fi")}))
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 30 * time.Minute, Delay: 0, Mode: "fail"}
			g.ReschedulePolicy = &structs.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: "constant",
				MaxDelay: time.Hour, Unlimited: true}
			j := nomadJob("test3", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-norescheduling-system": func() *structs.Job {
			g := nomadGroup("t", 1, nomadTask("t", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "lol 5000")}))
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 30 * time.Minute, Delay: 0, Mode: "fail"}
			j := nomadJob("test", "system", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-periodic-simple": func() *structs.Job {
			j := nomadJob("periodic", "batch", nomadGroup("group", 1, nomadTask("task", "docker", map[string]any{
				"image": "busybox:1", "command": "/bin/sh", "args": args("-c", "sleep 5")})))
			j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "set_contains_any", RTarget: "darwin,linux"}}
			// cron is Spec (the older argument); enabled, spec type cron
			// and time zone UTC are Nomad's defaults.
			j.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "13 13 31 1 7", SpecType: "cron",
				ProhibitOverlap: true, TimeZone: "UTC"}
			return j
		},
		"e2e-parameterized-simple": func() *structs.Job {
			j := nomadJob("periodic", "batch", nomadGroup("group", 1, nomadTask("task", "docker", map[string]any{
				"image": "busybox:1", "command": "/bin/sh", "args": args("-c", "sleep 5")})))
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "set_contains_any", RTarget: "darwin,linux"}}
			// payload is optional by default.
			j.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: "optional", MetaOptional: []string{"i"}}
			return j
		},
		"e2e-clientstate-sleeper": func() *structs.Job {
			// A task directly in the job is a group of its own.
			j := nomadJob("sleeper", "service", nomadGroup("sleeper", 1, nomadTask("sleeper", "raw_exec", map[string]any{
				"command": "/bin/bash", "args": args("-c", "echo $$ >> pid && sleep 999999")})))
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-clientstate-restarter": func() *structs.Job {
			g := nomadGroup("restarter", 1, nomadTask("restarter", "raw_exec", map[string]any{
				"command": "/bin/bash", "args": args("-c", "echo $$ >> pid && sleep 1 && exit 99")}))
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 100, Interval: 30 * time.Minute, Delay: 3 * time.Second, Mode: "fail"}
			j := nomadJob("restarter", "service", g)
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"jobspec2-kill-signal": func() *structs.Job {
			task := nomadTask("bar", "docker", map[string]any{"image": "hashicorp/image"})
			task.KillSignal = "SIGQUIT"
			return nomadJob("foo", "service", nomadGroup("bar", 1, task))
		},
		"e2e-eval-priority-thirteen": func() *structs.Job {
			j := nomadJob("networking", "service", nomadGroup("bridged", 1, nomadTask("sleep", "docker", map[string]any{
				"image": "busybox:1", "command": "/bin/sleep", "args": args("300")})))
			j.Priority = 13
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-example-env": func() *structs.Job {
			task := withResources(nomadTask("task", "raw_exec", map[string]any{"command": "env"}), 10, 10)
			task.User = "nobody"
			g := nomadGroup("group", 1, task)
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: 24 * time.Hour,
				Delay: 5 * time.Second, DelayFunction: "constant", Unlimited: false}
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("env", "batch", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-hostvolumes-single-mount": func() *structs.Job {
			// A host volume mounted by a docker task; Nomad's private
			// propagation and empty SELinux label are its defaults.
			task := nomadTask("test", "docker", map[string]any{
				"image": "bash:latest", "command": "bash", "args": args("-c", "sleep 15000")})
			task.VolumeMounts = []*structs.VolumeMount{{Volume: "data", Destination: "/tmp/foo"}}
			g := nomadGroup("test1", 1, task)
			g.Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "shared_data"}}
			j := nomadJob("test1", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-oversubscription-rawexec": func() *structs.Job {
			// memory_max parses as in Nomad (the server then refuses it
			// for raw_exec, which cannot enforce it).
			task := nomadTask("cat", "raw_exec", map[string]any{"command": "bash",
				"args": args("-c", "cat /sys/fs/cgroup/$(cat /proc/self/cgroup | cut -d':' -f3)/memory.max")})
			task.Resources = &structs.Resources{CPU: 100, MemoryMB: 64, MemoryMaxMB: 128}
			g := nomadGroup("group", 1, task)
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: 24 * time.Hour,
				Delay: 5 * time.Second, DelayFunction: "constant", Unlimited: false}
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("oversub", "batch", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-rawexec-oomadj": func() *structs.Job {
			g := nomadGroup("group", 1, nomadTask("cat", "raw_exec", map[string]any{
				"command": "cat", "args": args("/proc/self/oom_score_adj")}))
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: 24 * time.Hour,
				Delay: 5 * time.Second, DelayFunction: "constant", Unlimited: false}
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("oomadj", "batch", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-jobsubmissions-xyz": func() *structs.Job {
			// X, Y and Z come from corpusVars; a number and a bool become
			// text inside a string template.
			j := nomadJob("xyz", "batch", nomadGroup("group", 1, withResources(nomadTask("task", "raw_exec", map[string]any{
				"command": "echo", "args": args("X x-value, Y 3, Z true")}), 10, 16)))
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-system-job0": func() *structs.Job {
			task := nomadTask("system_task", "docker", map[string]any{
				"image": "busybox:1", "command": "/bin/sh", "args": args("-c", "sleep 15000")})
			task.Env = map[string]string{"version": "1"}
			g := nomadGroup("system_job_group", 1, task)
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 10, Interval: time.Minute, Delay: 2 * time.Second, Mode: "delay"}
			j := nomadJob("system_job", "system", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-taskevents-completed-leader": func() *structs.Job {
			leader := nomadTask("leader", "raw_exec", map[string]any{"command": "sleep", "args": args("1")})
			leader.Leader = true
			g := nomadGroup("completed_leader", 1,
				nomadTask("completed_leader", "raw_exec", map[string]any{"command": "sleep", "args": args("1000")}),
				leader)
			// Only attempts is set: the batch defaults fill in the rest.
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("completed_leader", "batch", g)
			j.Datacenters = []string{"dc1"}
			return j
		},
		"e2e-disconnected-lost-simple": func() *structs.Job {
			g := nomadGroup("group", 2, withResources(nomadTask("task", "docker", map[string]any{
				"image": "busybox:1", "command": "httpd", "args": args("-v", "-f", "-p", "8001", "-h", "/var/www")}), 128, 128))
			// operator = "distinct_hosts" with value "true" is kept as
			// written, as Nomad keeps it.
			g.Constraints = []*structs.Constraint{linux(), {Operand: "distinct_hosts", RTarget: "true"}}
			j := nomadJob("lost_simple", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			return j
		},
		"e2e-disconnected-lost-max-disconnect": func() *structs.Job {
			g := nomadGroup("group", 2, withResources(nomadTask("task", "docker", map[string]any{
				"image": "busybox:1", "command": "httpd", "args": args("-v", "-f", "-p", "8001", "-h", "/var/www")}), 128, 128))
			g.Constraints = []*structs.Constraint{linux(), {Operand: "distinct_hosts", RTarget: "true"}}
			hour := time.Hour
			g.MaxClientDisconnect = &hour
			j := nomadJob("lost_max_disconnect", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			return j
		},
		"command-fmt-job-in": func() *structs.Job {
			j := nomadJob("job1", "service", nomadGroup("group1", 1, withResources(
				nomadTask("task1", "exec", map[string]any{"command": "/bin/sleep"}), 1000, 512)))
			j.Datacenters = []string{"dc1"}
			return j
		},
		"demo-digitalocean-bench": func() *structs.Job {
			j := nomadJob("bench", "service", nomadGroup("cache", 10000, withResources(
				nomadTask("redis", "docker", map[string]any{"image": "redis"}), 100, 100)))
			j.Datacenters = []string{"nyc3"}
			return j
		},
		"jobspec-reschedule-job": func() *structs.Job {
			// A job-level reschedule block reaches every group, over the
			// batch defaults; setting attempts makes it limited.
			g := nomadGroup("bar", 3, nomadTask("bar", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "echo hi")}))
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 15, Interval: 30 * time.Minute,
				Delay: 10 * time.Second, DelayFunction: "constant"}
			j := nomadJob("foo", "batch", g)
			j.Datacenters = []string{"dc1"}
			return j
		},
		"jobspec-resources-cores": func() *structs.Job {
			// With cores, Nomad leaves cpu unset rather than defaulting it.
			task := nomadTask("task", "docker", nil)
			task.Resources = &structs.Resources{Cores: 4, MemoryMB: 128}
			return nomadJob("cores-test", "service", nomadGroup("group", 5, task))
		},
		"jobspec-task-nested-config": func() *structs.Job {
			// A block inside config is a list of maps under its name, as
			// Nomad's HCL1-compatible decoding has it.
			return nomadJob("foo", "service", nomadGroup("bar", 1, nomadTask("bar", "docker", map[string]any{
				"image": "hashicorp/image", "port_map": []any{map[string]any{"db": 1234}}})))
		},
		"e2e-drain-killtimeout": func() *structs.Job {
			task := withResources(nomadTask("task", "docker", map[string]any{
				"image": "busybox:1", "command": "/bin/sh", "args": args("local/script.sh")}), 256, 128)
			task.KillTimeout = 30 * time.Second
			// A template takes Nomad's splay (5s), perms ("0644") and
			// delimiters; the heredoc keeps its last newline.
			task.Templates = []*structs.Template{nomadTemplate("#!/bin/sh\ntrap 'sleep 60' 2\nsleep 600\n", "local/script.sh", "noop")}
			j := nomadJob("drain_killtimeout", "service", nomadGroup("group", 1, task))
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-isolation-exec": func() *structs.Job {
			task := withResources(nomadTask("bash", "exec", map[string]any{
				"command": "bash", "args": args("-c", "local/pid.sh")}), 10, 16)
			tmpl := nomadTemplate("#!/usr/bin/env bash\necho my pid is $BASHPID\n", "local/pid.sh", "noop")
			tmpl.Perms = "755"
			task.Templates = []*structs.Template{tmpl}
			g := nomadGroup("group", 1, task)
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: 24 * time.Hour,
				Delay: 5 * time.Second, DelayFunction: "constant", Unlimited: false}
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("exec", "batch", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-docker-redis": func() *structs.Job {
			// A port without static is dynamic; to is the port inside
			// the task's network (docker maps it).
			g := nomadGroup("cache", 1, withResources(nomadTask("redis", "docker", map[string]any{
				"image": "redis:7", "ports": args("db"), "auth_soft_fail": true}), 50, 128))
			// The server names the default host network, as Nomad's does.
			g.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "db", To: 6379, HostNetwork: "default"}}}}
			j := nomadJob("redis", "service", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-podman-basic": func() *structs.Job {
			g := nomadGroup("cache", 1, withResources(nomadTask("redis", "podman", map[string]any{
				"image": "redis:7", "ports": args("db")}), 50, 128))
			g.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "db", To: 6379, HostNetwork: "default"}}}}
			j := nomadJob("podman_basic", "service", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-pledge-curl": func() *structs.Job {
			// A network block in host mode without ports asks for nothing.
			g := nomadGroup("group", 1, nomadTask("curl", "pledge", map[string]any{
				"command": "curl", "args": args("https://example.com"), "promises": "stdio rpath inet dns sendfd"}))
			g.Networks = []*structs.NetworkResource{{Mode: "host"}}
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: 24 * time.Hour,
				Delay: 5 * time.Second, DelayFunction: "constant", Unlimited: false}
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("curl", "batch", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-namespace-a": func() *structs.Job {
			j := nomadJob("namespace_a", "service", nomadGroup("group", 1, withResources(nomadTask("task", "raw_exec", map[string]any{
				"command": "/bin/sh", "args": args("-c", "sleep 300")}), 256, 128)))
			j.Namespace = "NamespaceA"
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"command-asset-hello": func() *structs.Job {
			task := withResources(nomadTask("app", "docker", map[string]any{
				"image": "laoqui/hello-nomad:v1", "ports": args("http"), "auth_soft_fail": true}), 500, 256)
			// An identity block without a name is the default identity;
			// Nomad's server names it "default".
			task.Identity = &structs.WorkloadIdentity{Name: "default", Env: true, File: true}
			g := nomadGroup("web", 1, task)
			g.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http", To: 8080, HostNetwork: "default"}}}}
			return nomadJob("hello-nomad", "service", g)
		},
		"e2e-clientstate-alloc-zombie": func() *structs.Job {
			// ${NOMAD_PORT_http} is left for the client.
			g := nomadGroup("group", 1, withResources(nomadTask("python", "raw_exec", map[string]any{
				"command": "python3", "args": args("-m", "http.server", "${NOMAD_PORT_http}", "--directory", "/tmp")}), 10, 64))
			g.Networks = []*structs.NetworkResource{{Mode: "host", DynamicPorts: []structs.Port{{Label: "http", HostNetwork: "default"}}}}
			// A group service: no task name on it or its check; address
			// mode auto and on_update require_healthy are the defaults,
			// the check inherits on_update, and its own check_restart
			// keeps its grace. (Nomad's server also appends placement
			// constraints on the clients' native service discovery
			// fingerprints; Drover's clients all run native services and
			// it adds none.)
			g.Services = []*structs.Service{{Name: "alloczombie", PortLabel: "http", AddressMode: "auto",
				OnUpdate: "require_healthy", Provider: "nomad",
				Checks: []*structs.ServiceCheck{{Name: "alloczombiecheck", Type: "http", PortLabel: "http",
					Path: "/does/not/exist.txt", Interval: 2 * time.Second, Timeout: time.Second,
					CheckRestart: &structs.CheckRestart{Limit: 1, Grace: 3 * time.Second}, OnUpdate: "require_healthy"}}}}
			// max_delay keeps the service default; interval the restart one.
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 3, Interval: time.Minute, Delay: 5 * time.Second,
				DelayFunction: "constant", MaxDelay: time.Hour, Unlimited: false}
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 30 * time.Minute, Delay: 5 * time.Second, Mode: "fail"}
			return nomadJob("alloc_zombie", "service", g)
		},
		"e2e-dhv-register-volumes": func() *structs.Job {
			task := withResources(nomadTask("task", "raw_exec", map[string]any{
				"command": "bash", "args": args("${NOMAD_TASK_DIR}/register.sh", "${node.unique.id}")}), 100, 100)
			// Change mode restart is the default; a <<EOT heredoc keeps its
			// indentation and ends with the line before the marker (here
			// an empty one).
			task.Templates = []*structs.Template{
				nomadTemplate("#!/usr/bin/env bash\nset -ex\n\n"+
					"export NOMAD_ADDR=\"unix://${NOMAD_SECRETS_DIR}/api.sock\"\nNODE_ID=$1\nmkdir -p \"${NOMAD_META_vol_path}\"\n\n"+
					"sed -e \"s~NODE_ID~$NODE_ID~\" \\\n"+
					"    -e \"s~VOL_NAME~${NOMAD_META_vol_name}~\" \\\n"+
					"    -e \"s~VOL_SIZE~${NOMAD_META_vol_size}~\" \\\n"+
					"    -e \"s~VOL_PATH~${NOMAD_META_vol_path}~\" \\\n"+
					"    local/volume.hcl | nomad volume register -\n\n", "local/register.sh", "restart"),
				nomadTemplate("name      = \"VOL_NAME\"\nnode_id   = \"NODE_ID\"\ntype      = \"host\"\n"+
					"host_path = \"VOL_PATH\"\ncapacity  = \"VOL_SIZE\"\n\ncapability {\n"+
					"  access_mode     = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n", "local/volume.hcl", "restart"),
			}
			task.Identity = &structs.WorkloadIdentity{Name: "default", Env: true}
			g := nomadGroup("group", 1, task)
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("register-volumes", "batch", g)
			j.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: "optional", MetaRequired: []string{"vol_name", "vol_size", "vol_path"}}
			return j
		},
		"e2e-podman-auth-basic": func() *structs.Job {
			// The variables' defaults: the number-typed port becomes text
			// in the image string; the auth block inside config is a list
			// of one map.
			g := nomadGroup("basic", 1, withResources(nomadTask("echo", "podman", map[string]any{
				"image": "localhost:7511/docker.io/library/bash_auth_basic:private",
				"args":  args("echo", "The auth basic test is OK!"), "auth_soft_fail": true,
				"auth": []any{map[string]any{"username": "auth_basic_user", "password": "auth_basic_pass", "tls_verify": false}},
			}), 100, 64))
			g.Networks = []*structs.NetworkResource{{Mode: "host"}}
			// attempts and unlimited over the batch defaults.
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: 24 * time.Hour,
				Delay: 5 * time.Second, DelayFunction: "constant", Unlimited: false}
			j := nomadJob("auth_basic", "batch", g)
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-artifact-linux": func() *structs.Job {
			const gomod = "https://raw.githubusercontent.com/hashicorp/go-set/main/go.mod"
			const zip = "https://github.com/hashicorp/go-set/archive/refs/heads/main.zip"
			const git = "git::https://github.com/hashicorp/go-set"
			// Without a destination an artifact goes to local/; a given
			// destination is kept as written (${NOMAD_ALLOC_DIR} is the
			// client's).
			group := func(driver string, alloc string, disk, allocDisk int) []*structs.Task {
				ts := []*structs.Task{
					artifactTask(driver+"_file_default", driver, nomadArtifact(gomod, "local/", "any"), "local/go.mod", disk),
					artifactTask(driver+"_file_custom", driver, nomadArtifact(gomod, "local/my/path", "any"), "local/my/path/go.mod", disk),
				}
				if driver == "raw_exec" {
					ts = append(ts, artifactTask("rawexec_file_alloc_dots", driver, nomadArtifact(gomod, "../alloc/go.mod", "file"), "../alloc/go.mod", disk))
				}
				ts = append(ts,
					artifactTask(alloc, driver, nomadArtifact(gomod, "${NOMAD_ALLOC_DIR}/go.mod", "file"), "${NOMAD_ALLOC_DIR}/go.mod", allocDisk),
					artifactTask(driver+"_zip_default", driver, nomadArtifact(zip, "local/", "any"), "local/go-set-main/go.mod", disk),
					artifactTask(driver+"_zip_custom", driver, nomadArtifact(zip, "local/my/zip", "any"), "local/my/zip/go-set-main/go.mod", disk),
					artifactTask(driver+"_git_custom", driver, nomadArtifact(git, "local/repository", "any"), "local/repository/go.mod", disk))
				for _, t := range ts {
					t.Name = strings.Replace(t.Name, "raw_exec_", "rawexec_", 1)
				}
				return ts
			}
			j := nomadJob("linux", "batch",
				nomadGroup("rawexec", 1, group("raw_exec", "rawexec_file_alloc_env", 64, 64)...),
				nomadGroup("exec", 1, group("exec", "exec_file_alloc", 256, 64)...),
				nomadGroup("docker", 1, group("docker", "docker_file_alloc", 64, 64)...))
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-artifact-darwin": func() *structs.Job {
			const gomod = "https://raw.githubusercontent.com/hashicorp/go-set/main/go.mod"
			const zip = "https://github.com/hashicorp/go-set/archive/refs/heads/main.zip"
			j := nomadJob("darwin", "batch", nomadGroup("rawexec", 1,
				artifactTask("rawexec", "raw_exec", nomadArtifact(gomod, "local/", "any"), "local/go.mod", 64),
				artifactTask("rawexec_file_custom", "raw_exec", nomadArtifact(gomod, "local/my/path", "any"), "local/my/path/go.mod", 64),
				artifactTask("rawexec_zip_default", "raw_exec", nomadArtifact(zip, "local/", "any"), "local/go-set-main/go.mod", 64),
				artifactTask("rawexec_zip_custom", "raw_exec", nomadArtifact(zip, "local/my/zip", "any"), "local/my/zip/go-set-main/go.mod", 64),
				artifactTask("rawexec_git_custom", "raw_exec", nomadArtifact("git::https://github.com/hashicorp/go-set", "local/repository", "any"), "local/repository/go.mod", 64)))
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "darwin", Operand: "="}}
			return j
		},
		"e2e-artifact-limits": func() *structs.Job {
			task := nomadTask("zip_bomb", "raw_exec", map[string]any{"command": "/usr/bin/false"})
			task.Resources = &structs.Resources{CPU: 16, MemoryMB: 32}
			task.Artifacts = []*structs.TaskArtifact{nomadArtifact(
				"https://github.com/hashicorp/go-getter/raw/v1.7.0/testdata/decompress-zip/bomb.zip", "local/", "any")}
			g := nomadGroup("limits", 1, task)
			// attempts over the batch defaults; unlimited as written.
			g.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
			g.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: "fail"}
			j := nomadJob("linux", "batch", g)
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-consultemplate-shared-alloc": func() *structs.Job {
			// Three tasks share the allocation directory: artifacts written
			// to ../alloc and ${NOMAD_ALLOC_DIR}, templates too; the
			// raw_exec task is a prestart sidecar.
			sh := func(name, driver string) *structs.Task {
				cfg := map[string]any{"command": "/bin/sh", "args": args("-c", "sleep 300")}
				if driver == "docker" {
					cfg["image"] = "busybox:1"
				}
				return withResources(nomadTask(name, driver, cfg), 128, 64)
			}
			envTmpl := func(t *structs.Template) *structs.Template { t.Envvars = true; return t }
			raw := sh("raw_exec", "raw_exec")
			raw.Lifecycle = &structs.TaskLifecycleConfig{Hook: "prestart", Sidecar: true}
			raw.Artifacts = []*structs.TaskArtifact{nomadArtifact("https://google.com", "../alloc/google1.html", "any")}
			raw.Templates = []*structs.Template{
				nomadTemplate("{{env \"NOMAD_ALLOC_DIR\"}}\n", "${NOMAD_ALLOC_DIR}/${NOMAD_TASK_NAME}.env", "restart"),
				envTmpl(nomadTemplate("HELLO_FROM={{env \"NOMAD_TASK_NAME\"}}\n", "${NOMAD_ALLOC_DIR}/hello-from-raw.env", "restart")),
			}
			fromRaw := func() *structs.Template {
				t := envTmpl(nomadTemplate("", "${NOMAD_LOCAL_DIR}/hello-from-raw.env", "restart"))
				t.SourcePath = "${NOMAD_ALLOC_DIR}/hello-from-raw.env"
				return t
			}
			docker := sh("docker", "docker")
			docker.Artifacts = []*structs.TaskArtifact{nomadArtifact("https://google.com", "../alloc/google2.html", "any")}
			docker.Templates = []*structs.Template{
				nomadTemplate("{{env \"NOMAD_ALLOC_DIR\"}}\n", "${NOMAD_ALLOC_DIR}/${NOMAD_TASK_NAME}.env", "restart"), fromRaw()}
			exec := sh("exec", "exec")
			exec.Artifacts = []*structs.TaskArtifact{nomadArtifact("https://google.com", "${NOMAD_ALLOC_DIR}/google3.html", "any")}
			exec.Templates = []*structs.Template{
				nomadTemplate("{{env \"NOMAD_ALLOC_DIR\"}}\n", "${NOMAD_ALLOC_DIR}/${NOMAD_TASK_NAME}.env", "restart"), fromRaw()}
			j := nomadJob("template-shared-alloc", "service", nomadGroup("template-paths", 1, raw, docker, exec))
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-workload-id-node-meta": func() *structs.Job {
			// The variables come from corpusVars; is_set and is_not_set
			// take no value.
			docker := nomadTask("docker-nm", "docker", map[string]any{
				"image": "curlimages/curl:7.87.0",
				"args": args("--unix-socket", "${NOMAD_SECRETS_DIR}/api.sock", "-H", "Authorization: Bearer ${NOMAD_TOKEN}",
					"--data-binary", `{"Meta": {"unset": "set"}}`, "--fail-with-body", "--verbose", "localhost/v1/client/metadata")})
			exec := nomadTask("exec-nm", "exec", map[string]any{
				"command": "curl",
				"args": args("-H", "Authorization: Bearer ${NOMAD_TOKEN}", "--unix-socket", "${NOMAD_SECRETS_DIR}/api.sock",
					"--data-binary", `{"Meta": {"empty": null}}`, "--fail-with-body", "--verbose", "localhost/v1/client/metadata")})
			for _, task := range []*structs.Task{docker, exec} {
				// The task-level disk is kept as written.
				task.Resources = &structs.Resources{CPU: 16, MemoryMB: 32, DiskMB: 64}
				task.Identity = &structs.WorkloadIdentity{Name: "default", Env: true}
			}
			j := nomadJob("node-meta", "batch", nomadGroup("node-meta", 1, docker, exec))
			j.Datacenters = []string{"dc1"}
			j.Constraints = []*structs.Constraint{linux(),
				{LTarget: "${meta.foo}", RTarget: "bar", Operand: "="},
				{LTarget: "${meta.empty}", Operand: "is_set"},
				{LTarget: "${meta.unset}", Operand: "is_not_set"}}
			return j
		},
		"e2e-affinity-single": func() *structs.Job {
			g := nomadGroup("test1", 5, nomadTask("test", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "sleep 15000")}))
			g.Affinities = []*structs.Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: 100}}
			j := nomadJob("test1", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-affinity-multiple": func() *structs.Job {
			// One affinity on the job, one on the group.
			g := nomadGroup("test1", 4, nomadTask("test", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "sleep 15000")}))
			g.Affinities = []*structs.Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: 100}}
			j := nomadJob("test1", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			j.Affinities = []*structs.Affinity{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1", Weight: 100}}
			return j
		},
		"e2e-spread-even": func() *structs.Job {
			// A spread without targets: even over the values in use.
			g := nomadGroup("r1", 6, nomadTask("test", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "sleep 15000")}))
			g.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100}}
			j := nomadJob("r1", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			return j
		},
		"e2e-spread-multiple": func() *structs.Job {
			// An even spread on the job, a targeted one on the group.
			g := nomadGroup("test1", 10, nomadTask("test", "raw_exec", map[string]any{
				"command": "bash", "args": args("-c", "sleep 15000")}))
			g.Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 100,
				SpreadTarget: []*structs.SpreadTarget{{Value: "r1", Percent: 70}, {Value: "r2", Percent: 30}}}}
			j := nomadJob("r1", "service", g)
			j.Datacenters = []string{"dc1", "dc2"}
			j.Constraints = []*structs.Constraint{linux()}
			j.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100}}
			return j
		},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("testdata", "nomad", name+".nomad.hcl")
			got, err := ParseFile(file, &Options{Vars: corpusVars[name+".nomad.hcl"]})
			if err != nil {
				t.Fatal(err)
			}
			got.Canonicalize()
			if w := want(); !reflect.DeepEqual(got, w) {
				t.Errorf("parsed job differs from Nomad's meaning\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, w))
			}
		})
	}
}
