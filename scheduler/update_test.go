package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/scheduler/mock"
	"github.com/drover-project/drover/structs"
)

func TestJobUpdateInPlaceOrDestructive(t *testing.T) {
	cases := []struct {
		name        string
		edit        func(j *structs.Job)
		destructive bool
	}{
		{"env", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["NEW"] = "1" }, true},
		{"template", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{EmbeddedTmpl: "x", DestPath: "local/x"}}
		}, true},
		{"task meta", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Meta = map[string]string{"a": "b"} }, true},
		{"group meta", func(j *structs.Job) { j.TaskGroups[0].Meta = map[string]string{"a": "b"} }, true},
		{"job meta", func(j *structs.Job) { j.Meta = map[string]string{"a": "b"} }, true},
		{"task config", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["run_for"] = "20s" }, true},
		{"user", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].User = "nobody" }, true},
		{"kill timeout", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute }, false},
		{"kill signal", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillSignal = "SIGINT" }, false},
		{"leader", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Leader = true }, false},
		{"restart policy", func(j *structs.Job) { j.TaskGroups[0].RestartPolicy.Attempts = 9 }, false},
		{"reschedule policy", func(j *structs.Job) { j.TaskGroups[0].ReschedulePolicy.Attempts = 9 }, false},
		{"datacenters still include the node", func(j *structs.Job) { j.Datacenters = []string{"dc1", "dc2"} }, false},
		{"priority", func(j *structs.Job) { j.Priority = 70 }, false},
		// Services and checks change in place, as in Nomad: the client
		// re-registers.
		{"group service", func(j *structs.Job) {
			j.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: "nomad", PortLabel: "8080"}}
		}, false},
		{"task service", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Services = []*structs.Service{{Name: "api", Provider: "nomad", PortLabel: "8080",
				Checks: []*structs.ServiceCheck{{Type: "tcp", Interval: time.Second, Timeout: time.Second}}}}
		}, false},
		{"driver", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Driver = "raw_exec" }, true},
		{"cpu", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.CPU = 600 }, true},
		{"cores", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.Cores = 1 }, true},
		{"memory", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 300 }, true},
		{"disk", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.DiskMB = 500 }, true},
		{"memory_max", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 512 }, true},
		{"logs", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].LogConfig = &structs.LogConfig{MaxFiles: 2, MaxFileSizeMB: 1}
		}, true},
		{"ephemeral disk", func(j *structs.Job) { j.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 10} }, true},
		{"task restart policy", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].RestartPolicy = &structs.RestartPolicy{Attempts: 1, Mode: structs.RestartPolicyModeFail}
		}, false},
		{"shutdown delays", func(j *structs.Job) {
			d := time.Second
			j.TaskGroups[0].ShutdownDelay = &d
			j.TaskGroups[0].Tasks[0].ShutdownDelay = time.Second
		}, false},
		{"job constraint the node satisfies", func(j *structs.Job) {
			j.Constraints = append(j.Constraints, &structs.Constraint{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="})
		}, false},
		{"group constraint the node satisfies", func(j *structs.Job) {
			j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="}}
		}, false},
		{"task constraint the node satisfies", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="}}
		}, false},
		{"group constraint the node fails", func(j *structs.Job) {
			j.Datacenters = []string{"dc1", "dc1-new"}
			j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${node.datacenter}", RTarget: "dc1-new", Operand: "="}}
		}, true},
		{"task added", func(j *structs.Job) {
			t2 := j.TaskGroups[0].Tasks[0].Copy()
			t2.Name = "sidecar"
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, t2)
		}, true},
		{"task renamed", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "api" }, true},
		{"datacenters exclude the node", func(j *structs.Job) { j.Datacenters = []string{"dc1-new", "dc2"} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			nodes := mockNodes(t, h, 3)
			mockNodes(t, h, 3, func(_ int, n *structs.Node) { n.Datacenter = "dc1-new" })
			j := mock.Job()
			j.TaskGroups[0].Count = 3
			job := addJob(t, h, j)
			allocs := running(t, h, job, nodes, 3)
			newJob := updateJob(t, h, job, tc.edit)
			if newJob.JobModifyIndex == job.JobModifyIndex {
				t.Fatalf("update did not change JobModifyIndex")
			}
			process(t, h, newJob, structs.EvalTriggerJobRegister)

			live, _ := jobAllocs(t, h, newJob)
			if len(live) != 3 {
				t.Fatalf("%d live allocs, want 3", len(live))
			}
			old := map[string]*structs.Allocation{}
			for _, a := range allocs {
				old[a.ID] = a
			}
			stops := stopsIn(h)
			for _, a := range live {
				if a.Job.JobModifyIndex != newJob.JobModifyIndex {
					t.Fatalf("%s still runs job index %d", a.Name, a.Job.JobModifyIndex)
				}
				prev, kept := old[a.ID]
				switch {
				case tc.destructive && kept:
					t.Fatalf("%s updated in place; want destructive", a.Name)
				case tc.destructive:
					if a.PreviousAllocation == "" || stops[a.PreviousAllocation] == nil ||
						stops[a.PreviousAllocation].DesiredDescription != descUpdating {
						t.Fatalf("destructive update of %s did not stop its previous alloc", a.Name)
					}
				case !kept:
					t.Fatalf("%s replaced; want an in-place update", a.Name)
				default:
					if a.NodeID != prev.NodeID || a.Name != prev.Name {
						t.Fatalf("in-place update moved %s", a.Name)
					}
					if a.JobVersion != newJob.Version {
						t.Fatalf("in-place JobVersion %d, want %d", a.JobVersion, newJob.Version)
					}
				}
			}
			if !tc.destructive && len(stops) != 0 {
				t.Fatalf("in-place update stopped %d allocs", len(stops))
			}
		})
	}
}

func TestDestructiveUpdateOnFullCluster(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(j *structs.Job)
		wantNew  int // allocs of the new version live after the eval
		wantOld  int // allocs of the old version still live
		wantFail bool
	}{
		{"each replacement fits in its predecessor's room", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Driver = "raw_exec"
		}, 6, 0, false},
		{"replacements that do not fit leave the old version running", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Resources.CPU = 2500
		}, 0, 6, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHarness(t)
			// Room for exactly two allocations of 1900 MHz per node.
			nodes := mockNodes(t, h, 3, func(_ int, n *structs.Node) { n.NodeResources.Cpu.CpuShares = 3900 })
			j := mock.Job()
			j.TaskGroups[0].Count = 6
			j.TaskGroups[0].Tasks[0].Resources.CPU = 1900
			job := addJob(t, h, j)
			running(t, h, job, nodes, 6)
			newJob := updateJob(t, h, job, tc.edit)
			process(t, h, newJob, structs.EvalTriggerJobRegister)

			live, _ := jobAllocs(t, h, newJob)
			var fresh, old int
			for _, a := range live {
				if a.Job.JobModifyIndex == newJob.JobModifyIndex {
					fresh++
				} else {
					old++
				}
			}
			if fresh != tc.wantNew || old != tc.wantOld {
				t.Fatalf("new %d old %d live, want %d and %d", fresh, old, tc.wantNew, tc.wantOld)
			}
			e := lastEval(t, h)
			if (e.FailedTGAllocs["web"] != nil) != tc.wantFail {
				t.Fatalf("failed allocs %v, want failure %v", e.FailedTGAllocs, tc.wantFail)
			}
			if tc.wantFail && (e.FailedTGAllocs["web"].DimensionExhausted["cpu"] == 0 || e.BlockedEval == "") {
				t.Fatalf("failure metric %+v blocked %q", e.FailedTGAllocs["web"], e.BlockedEval)
			}
		})
	}
}

func withTemplate(j *structs.Job) {
	j.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{EmbeddedTmpl: "x", DestPath: "local/x",
		ChangeMode: structs.TemplateChangeModeRestart, Splay: 5 * time.Second}}
}

// TestDestructiveChange is the rule itself, field by field: what changes
// between two versions of a group decides in place ("") or destructive.
func TestDestructiveChange(t *testing.T) {
	two := func(j *structs.Job) {
		side := j.TaskGroups[0].Tasks[0].Copy()
		side.Name = "side"
		j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, side)
	}
	cases := []struct {
		name string
		base func(j *structs.Job) // applied to both versions; may be nil
		edit func(j *structs.Job) // applied to the new version
		want string
	}{
		{"nothing", nil, func(*structs.Job) {}, ""},
		{"count", nil, func(j *structs.Job) { j.TaskGroups[0].Count = 99 }, ""},
		{"priority", nil, func(j *structs.Job) { j.Priority = 90 }, ""},
		{"job affinity", nil, func(j *structs.Job) {
			j.Affinities = []*structs.Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: 50}}
		}, "affinities"},
		{"task affinity weight", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Affinities = []*structs.Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: 50}}
		}, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Affinities[0].Weight = 60 }, "affinities"},
		{"empty affinities", nil, func(j *structs.Job) { j.TaskGroups[0].Affinities = []*structs.Affinity{} }, ""},
		{"job spread", nil, func(j *structs.Job) {
			j.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
		}, "spreads"},
		{"group spread target", func(j *structs.Job) {
			j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50,
				SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 50}}}}
		}, func(j *structs.Job) { j.TaskGroups[0].Spreads[0].SpreadTarget[0].Percent = 60 }, "spreads"},
		{"all at once", nil, func(j *structs.Job) { j.AllAtOnce = true }, ""},
		{"datacenters", nil, func(j *structs.Job) { j.Datacenters = []string{"dc9"} }, ""},
		{"job constraints", nil, func(j *structs.Job) { j.Constraints = nil }, ""},
		{"group constraints", nil, func(j *structs.Job) {
			j.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${attr.arch}", RTarget: "arm64"}}
		}, ""},
		{"task constraints", nil, func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${attr.arch}", RTarget: "arm64"}}
		}, ""},
		{"restart policy", nil, func(j *structs.Job) { j.TaskGroups[0].RestartPolicy.Mode = structs.RestartPolicyModeDelay }, ""},
		{"reschedule policy", nil, func(j *structs.Job) { j.TaskGroups[0].ReschedulePolicy = nil }, ""},
		{"migrate", nil, func(j *structs.Job) { j.TaskGroups[0].Migrate.MaxParallel = 3 }, ""},
		{"kill timeout", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Hour }, ""},
		{"kill signal", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].KillSignal = "SIGUSR1" }, ""},
		{"leader", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Leader = true }, ""},
		{"env nil and empty", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env = nil },
			func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{} }, ""},
		{"config nil and empty", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config = nil },
			func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{} }, ""},
		{"tasks reordered", two, func(j *structs.Job) {
			ts := j.TaskGroups[0].Tasks
			ts[0], ts[1] = ts[1], ts[0]
		}, ""},
		{"job meta every task overrides", func(j *structs.Job) {
			j.Meta = map[string]string{"owner": "a"}
			j.TaskGroups[0].Tasks[0].Meta = map[string]string{"owner": "task"}
		}, func(j *structs.Job) { j.Meta["owner"] = "b" }, ""},
		{"meta moved from job to group", func(j *structs.Job) { j.Meta = map[string]string{"owner": "a"} },
			func(j *structs.Job) {
				j.Meta = nil
				j.TaskGroups[0].Meta = map[string]string{"owner": "a"}
			}, ""},

		{"group removed", nil, func(j *structs.Job) { j.TaskGroups[0].Name = "other" }, "task group"},
		{"task added", nil, two, "number of tasks"},
		{"task renamed", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Name = "api" }, "task web removed"},
		{"driver", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Driver = "raw_exec" }, "task web driver"},
		{"user", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].User = "nobody" }, "task web user"},
		{"config value", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["run_for"] = "1s" }, "task web config"},
		{"config args", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["args"] = []any{"a"} },
			func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["args"] = []any{"a", "b"} }, "task web config"},
		{"config key added", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config["exit_code"] = 1 }, "task web config"},
		{"env value", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env["PORT"] = "9090" }, "task web env"},
		{"env removed", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env = nil }, "task web env"},
		{"task meta", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Meta = map[string]string{"a": "b"} }, "task web meta"},
		{"group meta", nil, func(j *structs.Job) { j.TaskGroups[0].Meta = map[string]string{"a": "b"} }, "task web meta"},
		{"job meta", nil, func(j *structs.Job) { j.Meta = map[string]string{"a": "b"} }, "task web meta"},
		{"cpu", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.CPU++ }, "task web cpu"},
		{"cores", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.Cores = 2 }, "task web cores"},
		{"memory", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB++ }, "task web memory"},
		{"disk", nil, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Resources.DiskMB = 100 }, "task web disk"},
		{"template added", nil, func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{EmbeddedTmpl: "x", DestPath: "local/x"}}
		}, "task web templates"},
		{"template data", withTemplate, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl = "y" }, "task web templates"},
		{"template change mode", withTemplate, func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Templates[0].ChangeMode = structs.TemplateChangeModeNoop
		}, "task web templates"},
		{"template splay", withTemplate, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Templates[0].Splay = time.Second }, "task web templates"},
		{"artifact added", nil, func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{GetterSource: "https://example.com/a.tgz", GetterMode: "any", RelativeDest: "local/"}}
		}, "task web artifacts"},
		{"artifact checksum", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{{GetterSource: "https://example.com/a.tgz", GetterMode: "any", RelativeDest: "local/"}}
		}, func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Artifacts[0].GetterOptions = map[string]string{"checksum": "md5:00"}
		}, "task web artifacts"},
		{"artifacts nil and empty", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Artifacts = nil },
			func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Artifacts = []*structs.TaskArtifact{} }, ""},
		{"lifecycle added", nil, func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Lifecycle = &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart}
		}, "task web lifecycle"},
		{"lifecycle sidecar", func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Lifecycle = &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart}
		}, func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Lifecycle.Sidecar = true }, "task web lifecycle"},
		{"templates nil and empty", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Templates = nil },
			func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Templates = []*structs.Template{} }, ""},
		{"network added", nil, func(j *structs.Job) {
			j.TaskGroups[0].Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
		}, "network"},
		{"port changed", func(j *structs.Job) {
			j.TaskGroups[0].Networks = []*structs.NetworkResource{{ReservedPorts: []structs.Port{{Label: "http", Value: 8080}}}}
		}, func(j *structs.Job) { j.TaskGroups[0].Networks[0].ReservedPorts[0].Value = 8081 }, "network"},
		{"networks nil and empty", func(j *structs.Job) { j.TaskGroups[0].Networks = nil },
			func(j *structs.Job) { j.TaskGroups[0].Networks = []*structs.NetworkResource{} }, ""},
		{"task network", nil, func(j *structs.Job) {
			j.TaskGroups[0].Tasks[0].Resources.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "x"}}}}
		}, "task web network"},
		{"second task's env", two, func(j *structs.Job) { j.TaskGroups[0].Tasks[1].Env["X"] = "1" }, "task side env"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := mock.Job()
			if tc.base != nil {
				tc.base(old)
			}
			new := old.Copy()
			tc.edit(new)
			if got := destructiveChange(old, new, "web"); got != tc.want {
				t.Fatalf("destructiveChange = %q, want %q", got, tc.want)
			}
		})
	}
}
