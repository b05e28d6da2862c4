package structs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// svcJob is a valid job with one group service and one task service.
func svcJob() *Job {
	return &Job{ID: "web", TaskGroups: []*TaskGroup{{Name: "g", Count: 1,
		Networks: []*NetworkResource{{DynamicPorts: []Port{{Label: "http"}}}},
		Services: []*Service{{Provider: "nomad", PortLabel: "http", TaskName: "t",
			Checks: []*ServiceCheck{{Type: "http", Path: "/", Interval: 10 * time.Second, Timeout: 2 * time.Second}}}},
		Tasks: []*Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
			Services: []*Service{{Name: "api", Provider: "nomad", PortLabel: "8080"}}}}}}}
}

func TestServicesCanonicalize(t *testing.T) {
	j := svcJob()
	j.TaskGroups[0].Tasks[0].Services[0].Name = "${JOB}-${TASKGROUP}-${TASK}-${NOMAD_TASK_NAME}"
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	gs := j.TaskGroups[0].Services[0]
	if gs.Name != "web-g" || gs.AddressMode != AddressModeAuto || gs.OnUpdate != OnUpdateRequireHealthy {
		t.Fatalf("group service = %+v", gs)
	}
	if c := gs.Checks[0]; c.Name != `service: "web-g" check` || c.OnUpdate != OnUpdateRequireHealthy || c.CheckRestart != nil {
		t.Fatalf("check = %+v", c)
	}
	ts := j.TaskGroups[0].Tasks[0].Services[0]
	if ts.Name != "web-g-t-t" || ts.TaskName != "t" {
		t.Fatalf("task service = %+v", ts)
	}
	// Copy is deep.
	c := j.Copy()
	c.TaskGroups[0].Services[0].Checks[0].Path = "/other"
	if gs.Checks[0].Path != "/" {
		t.Fatal("Copy shares checks")
	}
}

func TestServicesValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(j *Job)
		field string
		want  string
	}{
		{"consul default", func(j *Job) { j.TaskGroups[0].Services[0].Provider = "" },
			"TaskGroups[0].Services[0].Provider", "Drover does not support Consul services"},
		{"unknown provider", func(j *Job) { j.TaskGroups[0].Services[0].Provider = "etcd" },
			"TaskGroups[0].Services[0].Provider", "Drover does not support the service provider"},
		{"name not DNS-safe", func(j *Job) { j.TaskGroups[0].Tasks[0].Services[0].Name = "api_v1" },
			"TaskGroups[0].Tasks[0].Services[0].Name", "RFC 1123"},
		{"name too long", func(j *Job) { j.TaskGroups[0].Tasks[0].Services[0].Name = strings.Repeat("a", 64) },
			"TaskGroups[0].Tasks[0].Services[0].Name", "RFC 1123"},
		{"name interpolated to bad", func(j *Job) { j.ID, j.Name = "my_job", "my_job" },
			"TaskGroups[0].Services[0].Name", "RFC 1123"},
		{"http needs path", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Path = "" },
			"TaskGroups[0].Services[0].Checks[0].Path", "needs a path"},
		{"absolute path", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Path = "http://x/y" },
			"TaskGroups[0].Services[0].Checks[0].Path", "must be relative"},
		{"script needs command", func(j *Job) {
			c := j.TaskGroups[0].Services[0].Checks[0]
			c.Type, c.TaskName = "script", "t"
		}, "TaskGroups[0].Services[0].Checks[0].Command", "needs a command"},
		{"group script names task", func(j *Job) {
			c := j.TaskGroups[0].Services[0].Checks[0]
			c.Type, c.Command = "script", "/bin/true"
		}, "TaskGroups[0].Services[0].Checks[0].TaskName", "must name the task"},
		{"check names a missing task", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].TaskName = "nope" },
			"TaskGroups[0].Services[0].Checks[0].TaskName", `no task "nope"`},
		{"grpc refused", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Type = "grpc" },
			"TaskGroups[0].Services[0].Checks[0].Type", "Drover does not support grpc checks"},
		{"bad type", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Type = "docker" },
			"TaskGroups[0].Services[0].Checks[0].Type", "invalid check type"},
		{"interval missing", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Interval = 0 },
			"TaskGroups[0].Services[0].Checks[0].Interval", "must be set"},
		{"interval short", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Interval = time.Millisecond },
			"TaskGroups[0].Services[0].Checks[0].Interval", "at least 1s"},
		{"timeout short", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Timeout = 10 * time.Millisecond },
			"TaskGroups[0].Services[0].Checks[0].Timeout", "at least 1s"},
		{"needs a port", func(j *Job) { j.TaskGroups[0].Services[0].PortLabel = "" },
			"TaskGroups[0].Services[0].Checks[0].PortLabel", "needs a port"},
		{"duplicate check", func(j *Job) {
			s := j.TaskGroups[0].Services[0]
			s.Checks = append(s.Checks, s.Checks[0].Copy())
		}, "TaskGroups[0].Services[0].Checks[1].Name", "duplicate check name"},
		{"duplicate service", func(j *Job) {
			s := j.TaskGroups[0].Tasks[0].Services[0]
			j.TaskGroups[0].Services = append(j.TaskGroups[0].Services, &Service{Name: s.Name, PortLabel: s.PortLabel, Provider: "nomad"})
		}, "TaskGroups[0].Services[1].Name", "duplicate service"},
		{"undefined port label", func(j *Job) { j.TaskGroups[0].Tasks[0].Services[0].PortLabel = "web" },
			"TaskGroups[0].Tasks[0].Services[0].PortLabel", "not defined"},
		{"another task's legacy port", func(j *Job) {
			// A task's legacy network serves its own services only.
			j.TaskGroups[0].Tasks[0].Services[0].PortLabel = "web"
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &Task{Name: "u", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/true"},
				Resources: &Resources{Networks: []*NetworkResource{{DynamicPorts: []Port{{Label: "web"}}}}}})
		}, "TaskGroups[0].Tasks[0].Services[0].PortLabel", "not defined"},
		{"on_update ignore refused", func(j *Job) { j.TaskGroups[0].Services[0].OnUpdate = OnUpdateIgnore },
			"TaskGroups[0].Services[0].OnUpdate", "Drover does not support on_update"},
		{"on_update bad", func(j *Job) { j.TaskGroups[0].Services[0].OnUpdate = "x" },
			"TaskGroups[0].Services[0].OnUpdate", "must be"},
		{"address mode bad", func(j *Job) { j.TaskGroups[0].Services[0].AddressMode = "x" },
			"TaskGroups[0].Services[0].AddressMode", "must be"},
		{"group driver mode", func(j *Job) { j.TaskGroups[0].Services[0].AddressMode = AddressModeDriver },
			"TaskGroups[0].Services[0].AddressMode", "cannot use address_mode \"driver\""},
		{"address needs auto", func(j *Job) {
			s := j.TaskGroups[0].Services[0]
			s.Address, s.AddressMode = "10.0.0.1", AddressModeHost
		}, "TaskGroups[0].Services[0].Address", "must be \"auto\""},
		{"initial status", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].InitialStatus = "ok" },
			"TaskGroups[0].Services[0].Checks[0].InitialStatus", "must be"},
		{"unknown port label", func(j *Job) { j.TaskGroups[0].Tasks[0].Services[0].PortLabel = "admin" },
			"TaskGroups[0].Tasks[0].Services[0].PortLabel", `port label "admin" is not defined`},
		{"unknown check port label", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].PortLabel = "nope" },
			"TaskGroups[0].Services[0].Checks[0].PortLabel", `port label "nope" is not defined`},
		{"method", func(j *Job) { j.TaskGroups[0].Services[0].Checks[0].Method = "FETCH" },
			"TaskGroups[0].Services[0].Checks[0].Method", "unknown HTTP method"},
		{"task check names other task", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Services[0].Checks = []*ServiceCheck{{Type: "tcp", TaskName: "x",
				Interval: time.Second, Timeout: time.Second}}
		}, "TaskGroups[0].Tasks[0].Services[0].Checks[0].TaskName", "only a group service's checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := svcJob()
			tc.edit(j)
			j.Canonicalize()
			err := j.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v; want a ValidationError", err)
			}
			for _, fe := range ve.Errors {
				if fe.Field == tc.field && strings.Contains(fe.Message, tc.want) {
					return
				}
			}
			t.Fatalf("err = %v; want %s: ...%s...", err, tc.field, tc.want)
		})
	}
}

// A group service's check with check_restart need not name a task: it
// then restarts every task of the allocation, as Nomad's (its e2e job
// alloc_zombie relies on it).
func TestGroupCheckRestartWithoutTask(t *testing.T) {
	j := svcJob()
	j.TaskGroups[0].Services[0].Checks[0].CheckRestart = &CheckRestart{Limit: 2}
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		t.Fatalf("a group check_restart without a task: %v", err)
	}
}

// A task's service may name a port of the task's legacy network block
// (resources { network }), as in Nomad.
func TestTaskServiceLegacyPort(t *testing.T) {
	j := svcJob()
	task := j.TaskGroups[0].Tasks[0]
	task.Resources = &Resources{CPU: 100, MemoryMB: 64, Networks: []*NetworkResource{{DynamicPorts: []Port{{Label: "web"}}}}}
	task.Services[0].PortLabel = "web"
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
}
