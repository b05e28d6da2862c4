package jobspec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// minimal wraps a task body in a job and group.
func minimal(task string) string {
	return `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
` + task + `
    }
  }
}`
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	buf, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return buf
}

func mustParse(t *testing.T, src string, opts *Options) *structs.Job {
	t.Helper()
	job, err := Parse("test.hcl", []byte(src), opts)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return job
}

func TestParseJob(t *testing.T) {
	src := `
job "web" {
  name        = "Web"
  type        = "batch"
  priority    = 70
  datacenters = ["dc1", "dc2"]
  region      = "global"
  namespace   = "prod"
  all_at_once = true
  meta {
    team = "a"
    n    = 3
  }
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  group "g" {
    count = 4
    meta = { tier = "front" }
    constraint {
      attribute = "${meta.rack}"
      operator  = "!="
      value     = "r1"
    }
    task "t" {
      driver       = "raw_exec"
      user         = "nobody"
      kill_timeout = "1m30s"
      kill_signal  = "SIGINT"
      leader       = true
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ${NOMAD_TASK_DIR}"]
        port    = 8080
        ratio   = 0.5
        debug   = true
      }
      env {
        A = "1"
        B = 2
      }
      resources {
        cpu    = 250
        memory = 128
        cores  = 1
        disk   = 10
      }
    }
  }
}`
	job := mustParse(t, src, nil)
	want := &structs.Job{
		ID: "web", Name: "Web", Type: "batch", Priority: 70, Datacenters: []string{"dc1", "dc2"},
		Region: "global", Namespace: "prod", AllAtOnce: true,
		Meta:        map[string]string{"team": "a", "n": "3"},
		Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 4, Meta: map[string]string{"tier": "front"},
			Constraints: []*structs.Constraint{{LTarget: "${meta.rack}", RTarget: "r1", Operand: "!="}},
			Tasks: []*structs.Task{{
				Name: "t", Driver: "raw_exec", User: "nobody", KillTimeout: 90 * time.Second,
				KillSignal: "SIGINT", Leader: true,
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo ${NOMAD_TASK_DIR}"},
					"port": 8080, "ratio": 0.5, "debug": true},
				Env:       map[string]string{"A": "1", "B": "2"},
				Resources: &structs.Resources{CPU: 250, MemoryMB: 128, Cores: 1, DiskMB: 10},
			}},
		}},
	}
	if !reflect.DeepEqual(job, want) {
		got, _ := json.MarshalIndent(job, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("job differs\ngot:  %s\nwant: %s", got, exp)
	}
}

func TestParseDefaultsAndPolicies(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		check func(t *testing.T, job *structs.Job)
	}{
		{name: "count defaults to 1, policies left to the server", src: minimal(""),
			check: func(t *testing.T, job *structs.Job) {
				tg := job.TaskGroups[0]
				if tg.Count != 1 || tg.RestartPolicy != nil || tg.ReschedulePolicy != nil || tg.Migrate != nil {
					t.Fatalf("group = %+v", tg)
				}
				if job.Type != "" || job.Priority != 0 || job.Name != "j" {
					t.Fatalf("job = %+v", job)
				}
			}},
		{name: "count zero is kept", src: `job "j" { 
  group "g" {
    count = 0
    task "t" { driver = "raw_exec" }
  }
}`,
			check: func(t *testing.T, job *structs.Job) {
				if job.TaskGroups[0].Count != 0 {
					t.Fatalf("count = %d", job.TaskGroups[0].Count)
				}
			}},
		{name: "partial restart keeps the batch defaults", src: `job "j" {
  type = "batch"
  group "g" {
    restart { attempts = 5 }
    task "t" { driver = "raw_exec" }
  }
}`,
			check: func(t *testing.T, job *structs.Job) {
				want := structs.DefaultRestartPolicy("batch")
				want.Attempts = 5
				if got := job.TaskGroups[0].RestartPolicy; !reflect.DeepEqual(got, want) {
					t.Fatalf("restart = %+v; want %+v", got, want)
				}
			}},
		{name: "reschedule attempts make a limited policy", src: `job "j" {
  group "g" {
    reschedule {
      attempts = 3
      interval = "1h"
    }
    task "t" { driver = "raw_exec" }
  }
}`,
			check: func(t *testing.T, job *structs.Job) {
				p := job.TaskGroups[0].ReschedulePolicy
				if p.Attempts != 3 || p.Interval != time.Hour || p.Unlimited || p.DelayFunction != "exponential" {
					t.Fatalf("reschedule = %+v", p)
				}
			}},
		{name: "job-level reschedule and migrate reach every group", src: `job "j" {
  reschedule {
    delay          = "10s"
    delay_function = "constant"
  }
  migrate { max_parallel = 3 }
  group "a" {
    task "t" { driver = "raw_exec" }
  }
  group "b" {
    reschedule { max_delay = "2m" }
    migrate {
      health_check     = "task_states"
      min_healthy_time = "5s"
      healthy_deadline = "1m"
    }
    task "t" { driver = "raw_exec" }
  }
}`,
			check: func(t *testing.T, job *structs.Job) {
				a, b := job.TaskGroups[0], job.TaskGroups[1]
				if a.ReschedulePolicy.Delay != 10*time.Second || a.ReschedulePolicy.DelayFunction != "constant" || a.Migrate.MaxParallel != 3 {
					t.Fatalf("group a = %+v %+v", a.ReschedulePolicy, a.Migrate)
				}
				if b.ReschedulePolicy.Delay != 10*time.Second || b.ReschedulePolicy.MaxDelay != 2*time.Minute {
					t.Fatalf("group b reschedule = %+v", b.ReschedulePolicy)
				}
				wantM := &structs.MigrateStrategy{MaxParallel: 3, HealthCheck: "task_states", MinHealthyTime: 5 * time.Second, HealthyDeadline: time.Minute}
				if !reflect.DeepEqual(b.Migrate, wantM) {
					t.Fatalf("group b migrate = %+v", b.Migrate)
				}
				if a.ReschedulePolicy == b.ReschedulePolicy {
					t.Fatal("groups share one policy")
				}
			}},
		{name: "constraint shorthands", src: minimal(`
      constraint { distinct_hosts = true }
      constraint { distinct_hosts = false }
      constraint {
        distinct_property = "${meta.rack}"
        value             = "2"
      }
      constraint {
        attribute = "${attr.os.version}"
        version   = ">= 1.2"
      }
      constraint {
        attribute = "${attr.kernel.name}"
        regexp    = "^lin"
      }
      constraint {
        attribute    = "${meta.tags}"
        set_contains = "a,b"
      }
      constraint {
        attribute = "${attr.cpu.arch}"
        operator  = "is_set"
      }`),
			check: func(t *testing.T, job *structs.Job) {
				want := []*structs.Constraint{
					{Operand: "distinct_hosts"},
					{LTarget: "${meta.rack}", RTarget: "2", Operand: "distinct_property"},
					{LTarget: "${attr.os.version}", RTarget: ">= 1.2", Operand: "version"},
					{LTarget: "${attr.kernel.name}", RTarget: "^lin", Operand: "regexp"},
					{LTarget: "${meta.tags}", RTarget: "a,b", Operand: "set_contains"},
					{LTarget: "${attr.cpu.arch}", Operand: "is_set"},
				}
				if got := job.TaskGroups[0].Tasks[0].Constraints; !reflect.DeepEqual(got, want) {
					g, _ := json.Marshal(got)
					t.Fatalf("constraints = %s", g)
				}
			}},
		{name: "free-form config with nested blocks", src: minimal(`
      config {
        command = "x"
        mount {
          type   = "bind"
          source = "/a"
        }
        mount {
          type = "tmpfs"
        }
        labels = {
          "com.example/a" = "b"
          nested          = { list = [1, 2] }
        }
      }`),
			check: func(t *testing.T, job *structs.Job) {
				want := map[string]any{
					"command": "x",
					"mount":   []any{map[string]any{"type": "bind", "source": "/a"}, map[string]any{"type": "tmpfs"}},
					"labels":  map[string]any{"com.example/a": "b", "nested": map[string]any{"list": []any{1, 2}}},
				}
				if got := job.TaskGroups[0].Tasks[0].Config; !reflect.DeepEqual(got, want) {
					t.Fatalf("config = %#v", got)
				}
			}},
		{name: "config, env and meta as arguments", src: minimal(`
      config = { command = "/bin/true" }
      env    = { "A.B" = "c" }
      meta   = { k = true }`),
			check: func(t *testing.T, job *structs.Job) {
				task := job.TaskGroups[0].Tasks[0]
				if task.Config["command"] != "/bin/true" || task.Env["A.B"] != "c" || task.Meta["k"] != "true" {
					t.Fatalf("task = %+v", task)
				}
			}},
		{name: "runtime interpolation kept verbatim", src: minimal(`
      env {
        IP   = "${attr.unique.network.ip-address}"
        DIR  = "${NOMAD_ALLOC_DIR}/data"
        NODE = "node ${node.unique.name} in ${node.datacenter}"
        META = "${meta["rack-id"]}"
        LIT  = "$${not.interpolated}"
      }`),
			check: func(t *testing.T, job *structs.Job) {
				want := map[string]string{
					"IP": "${attr.unique.network.ip-address}", "DIR": "${NOMAD_ALLOC_DIR}/data",
					"NODE": "node ${node.unique.name} in ${node.datacenter}", "META": `${meta["rack-id"]}`,
					"LIT": "${not.interpolated}",
				}
				if got := job.TaskGroups[0].Tasks[0].Env; !reflect.DeepEqual(got, want) {
					t.Fatalf("env = %#v", got)
				}
			}},
		{name: "functions and locals", src: `
locals {
  base  = "svc"
  name  = "${local.base}-${upper(var.env)}"
  ports = [for p in [1, 2] : p * 1000]
}
variable "env" { default = "prod" }
job "j" {
  meta = {
    name  = local.name
    joined = join(",", [for p in local.ports : tostring(p)])
    fmt   = format("%03d", 7)
    tried = try(var.nope, "fallback")
  }
  group "g" {
    task "t" { driver = "raw_exec" }
  }
}`,
			check: func(t *testing.T, job *structs.Job) {
				want := map[string]string{"name": "svc-PROD", "joined": "1000,2000", "fmt": "007", "tried": "fallback"}
				if !reflect.DeepEqual(job.Meta, want) {
					t.Fatalf("meta = %#v", job.Meta)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustParse(t, tc.src, nil))
		})
	}
}

func TestParseVariables(t *testing.T) {
	src := `
variable "count" {
  type    = number
  default = 1
}
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
variable "image" {
  type = string
}
variable "anything" {
  default = "x"
}
job "j" {
  datacenters = var.dcs
  meta = {
    image    = var.image
    anything = var.anything
  }
  group "g" {
    count = var.count
    task "t" { driver = "raw_exec" }
  }
}`
	dir := t.TempDir()
	varFile := filepath.Join(dir, "vars.hcl")
	if err := os.WriteFile(varFile, []byte("image = \"from-file\"\ncount = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		opts      *Options
		wantCount int
		wantDCs   []string
		wantImage string
		wantErr   string
	}{
		{name: "missing required", opts: nil, wantErr: `test.hcl:10:1: Unset variable: variable "image" has no default`},
		{name: "-var", opts: &Options{Vars: map[string]string{"image": "a", "count": "3", "dcs": `["x", "y"]`}},
			wantCount: 3, wantDCs: []string{"x", "y"}, wantImage: "a"},
		{name: "var file", opts: &Options{VarFiles: []string{varFile}}, wantCount: 7, wantDCs: []string{"dc1"}, wantImage: "from-file"},
		{name: "-var beats var file", opts: &Options{VarFiles: []string{varFile}, Vars: map[string]string{"image": "cli"}},
			wantCount: 7, wantDCs: []string{"dc1"}, wantImage: "cli"},
		{name: "bad number", opts: &Options{Vars: map[string]string{"image": "a", "count": "three"}},
			wantErr: `Invalid value for variable: -var count=three: variable "count" is of type number`},
		{name: "bad list", opts: &Options{Vars: map[string]string{"image": "a", "dcs": `["x"`}},
			wantErr: `-var dcs=["x": variable "dcs" is of type list(string)`},
		{name: "undeclared", opts: &Options{Vars: map[string]string{"image": "a", "nope": "1"}},
			wantErr: `Undeclared variable: -var nope=...: the job file declares no variable "nope"`},
		{name: "missing var file", opts: &Options{Vars: map[string]string{"image": "a"}, VarFiles: []string{filepath.Join(dir, "none.hcl")}},
			wantErr: "Failed to read variable file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := Parse("test.hcl", []byte(src), tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if job.TaskGroups[0].Count != tc.wantCount || !reflect.DeepEqual(job.Datacenters, tc.wantDCs) ||
				job.Meta["image"] != tc.wantImage || job.Meta["anything"] != "x" {
				t.Fatalf("job: count %d dcs %v meta %v", job.TaskGroups[0].Count, job.Datacenters, job.Meta)
			}
		})
	}
}

func TestParseJSON(t *testing.T) {
	bare := `{"ID": "web", "Type": "batch", "TaskGroups": [{"Name": "g", "Count": 2,
	  "Tasks": [{"Name": "t", "Driver": "raw_exec", "KillTimeout": 3000000000,
	    "Config": {"command": "/bin/true", "Anything": {"Goes": [1]}}}]}],
	  "Update": null, "Periodic": null, "Spreads": [], "Dispatched": false, "ConsulToken": ""}`
	cases := []struct {
		name    string
		src     string
		opts    *Options
		wantErr string
	}{
		{name: "bare", src: bare},
		{name: "wrapped", src: `{"Job": ` + bare + `}`},
		{name: "wrapped with empty extras", src: `  {"Job": ` + bare + `, "EnforceIndex": false}`},
		{name: "unsupported fields", src: `{"Job": {"ID": "web", "Multiregion": {"Strategy": {"MaxParallel": 2}},
		  "TaskGroups": [{"Name": "g", "Services": [{"Name": "s", "Connect": {"Native": true}}], "Tasks": [{"Name": "t", "Vault": {"Policies": ["a"]}}]}]}}`,
			wantErr: "test.hcl: Unsupported field: Job.Multiregion: Drover does not support multiregion jobs\n" +
				"test.hcl: Unsupported field: Job.TaskGroups[0].Services[0].Connect: Drover does not support Consul Connect\n" +
				"test.hcl: Unsupported field: Job.TaskGroups[0].Tasks[0].Vault: Drover does not support Vault; instead, keep secrets in Drover's variables and read them in templates with nomadVar (the task's workload identity grants access)"},
		{name: "syntax error has a position", src: "{\n  \"Job\": {\n    \"ID\": web\n  }\n}",
			wantErr: "test.hcl:3:11: Invalid JSON: invalid character 'w' looking for beginning of value"},
		{name: "truncated", src: `{"Job": {"ID": "web"`, wantErr: "Invalid JSON: unexpected end of file"},
		{name: "wrong type", src: `{"ID": "web", "TaskGroups": [{"Count": "two"}]}`,
			wantErr: "test.hcl: Invalid value: Job.TaskGroups.Count: expected an integer, got JSON string"},
		{name: "duration as string", src: `{"ID": "web", "TaskGroups": [{"Tasks": [{"KillTimeout": "5s"}]}]}`,
			wantErr: "expected an integer (nanoseconds)"},
		{name: "two values", src: `{"ID": "a"} {"ID": "b"}`, wantErr: "exactly one JSON object"},
		{name: "not an object", src: `{"Job": [1]}`, wantErr: "Unsupported field: Job.Job: Drover does not support this field"},
		{name: "vars refused", src: bare, opts: &Options{Vars: map[string]string{"a": "b"}}, wantErr: "apply to HCL job files only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := Parse("test.hcl", []byte(tc.src), tc.opts)
			if tc.wantErr != "" {
				var perr *Error
				if err == nil || !errors.As(err, &perr) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want *Error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			task := job.TaskGroups[0].Tasks[0]
			if job.ID != "web" || job.Type != "batch" || job.TaskGroups[0].Count != 2 || task.KillTimeout != 3*time.Second ||
				task.Config["command"] != "/bin/true" {
				t.Fatalf("job = %+v task = %+v", job, task)
			}
		})
	}
}

// A job printed by `drover job inspect` (the API shape, every field set)
// parses back to the same job.
func TestParseJSONRoundTrip(t *testing.T) {
	job := mustParse(t, ExampleJob, nil)
	job.Canonicalize()
	job.Status, job.Version, job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = "running", 3, 10, 12, 12
	buf, err := json.MarshalIndent(map[string]any{"Job": job}, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("inspect.json", buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	// JSON numbers in the free-form config come back as float64.
	job.TaskGroups[0].Tasks[0].Config = back.TaskGroups[0].Tasks[0].Config
	if !reflect.DeepEqual(back, job) {
		t.Fatalf("round trip differs:\n%+v\n%+v", back, job)
	}
}

func TestExampleJobIsValid(t *testing.T) {
	job := mustParse(t, ExampleJob, nil)
	job.Canonicalize()
	if err := job.Validate(); err != nil {
		t.Fatalf("example job does not validate: %v", err)
	}
	if job.ID != "example" || job.TaskGroups[0].Count != 2 || len(job.TaskGroups[0].Constraints) != 1 {
		t.Fatalf("example job = %+v", job)
	}
}

// Every file in examples/ parses and validates.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.hcl")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			job, err := ParseFile(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			job.Canonicalize()
			if err := job.Validate(); err != nil {
				t.Fatalf("does not validate: %v", err)
			}
			for _, tg := range job.TaskGroups {
				for _, task := range tg.Tasks {
					if err := driverspec.ValidateTaskConfig(task.Driver, task.Config); err != nil || task.Config["command"] == nil {
						t.Fatalf("task %s: driver %q config %v: %v", task.Name, task.Driver, task.Config, err)
					}
				}
			}
		})
	}
}

func TestParseFileMissing(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "nope.hcl"), nil)
	if err == nil || !strings.Contains(err.Error(), "nope.hcl: Failed to read job file: no such file or directory") {
		t.Fatalf("err = %v", err)
	}
}
