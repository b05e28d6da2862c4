package jobspec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// TestUpdateBlockHCLAndJSON checks that the update block means the same
// in an HCL file and in the JSON Nomad's CLI sends for it (nulls for the
// arguments not written): the job's block over Nomad's defaults, each
// group's own arguments over the job's, and a group without a block
// taking the job's.
func TestUpdateBlockHCLAndJSON(t *testing.T) {
	hcl := `job "web" {
  update {
    max_parallel     = 2
    min_healthy_time = "2s"
    auto_revert      = true
  }
  group "a" {
    count = 6
    update {
      canary       = 1
      health_check = "task_states"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
  group "b" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}`
	json := `{"ID": "web", "Name": "web",
  "Update": {"Stagger": null, "MaxParallel": 2, "HealthCheck": null, "MinHealthyTime": 2000000000,
    "HealthyDeadline": null, "ProgressDeadline": null, "AutoRevert": true, "AutoPromote": null, "Canary": null},
  "TaskGroups": [
    {"Name": "a", "Count": 6, "Update": {"Canary": 1, "HealthCheck": "task_states", "MaxParallel": null},
     "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}}]},
    {"Name": "b", "Count": null, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}}]}]}`

	fromHCL := mustParse(t, hcl, nil)
	fromJSON, err := DecodeAPIJobBytes("Job", []byte(json))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []*structs.Job{fromHCL, fromJSON} {
		j.Canonicalize()
		validUpdate(t, j)
	}
	jobLevel := &structs.UpdateStrategy{Stagger: 30 * time.Second, MaxParallel: 2, HealthCheck: "checks",
		MinHealthyTime: 2 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute, AutoRevert: true}
	groupA := jobLevel.Copy()
	groupA.Canary, groupA.HealthCheck = 1, "task_states"
	for name, j := range map[string]*structs.Job{"hcl": fromHCL, "json": fromJSON} {
		if !reflect.DeepEqual(j.Update, jobLevel) {
			t.Errorf("%s: job update = %+v, want %+v", name, j.Update, jobLevel)
		}
		if !reflect.DeepEqual(j.TaskGroups[0].Update, groupA) {
			t.Errorf("%s: group a update = %+v, want %+v", name, j.TaskGroups[0].Update, groupA)
		}
		if !reflect.DeepEqual(j.TaskGroups[1].Update, jobLevel) {
			t.Errorf("%s: group b update = %+v, want the job's %+v", name, j.TaskGroups[1].Update, jobLevel)
		}
	}
	if !reflect.DeepEqual(fromHCL, fromJSON) {
		t.Errorf("HCL and JSON differ:\n hcl %s\njson %s", mustJSON(t, fromHCL), mustJSON(t, fromJSON))
	}
}

// TestUpdateBlockCanonicalDefaultIsAbsent checks that the update block
// Nomad's Go client fills in when it canonicalizes a job without one (every
// argument at Nomad's default) is taken as absent, while a block the user
// wrote with the same values but arguments left null is kept.
func TestUpdateBlockCanonicalDefaultIsAbsent(t *testing.T) {
	canonical := `{"Stagger": 30000000000, "MaxParallel": 1, "HealthCheck": "checks", "MinHealthyTime": 10000000000,
	  "HealthyDeadline": 300000000000, "ProgressDeadline": 600000000000, "AutoRevert": false, "AutoPromote": false, "Canary": 0}`
	src := `{"ID": "web", "Update": ` + canonical + `, "TaskGroups": [{"Name": "g", "Update": ` + canonical + `,
	  "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}}]}]}`
	j, err := DecodeAPIJobBytes("Job", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	j.Canonicalize()
	if j.Update != nil || j.TaskGroups[0].Update != nil {
		t.Fatalf("canonical default update kept: job %+v group %+v", j.Update, j.TaskGroups[0].Update)
	}
	written := strings.Replace(src, `"MaxParallel": 1, `, `"MaxParallel": null, `, 1)
	j, err = DecodeAPIJobBytes("Job", []byte(written))
	if err != nil {
		t.Fatal(err)
	}
	j.Canonicalize()
	if !reflect.DeepEqual(j.Update, structs.DefaultUpdateStrategy()) || !reflect.DeepEqual(j.TaskGroups[0].Update, structs.DefaultUpdateStrategy()) {
		t.Fatalf("written update block: job %+v group %+v, want the defaults", j.Update, j.TaskGroups[0].Update)
	}
}

// TestUpdateBlockValidation checks that each invalid update block is
// refused naming its field.
func TestUpdateBlockValidation(t *testing.T) {
	cases := []struct {
		name, block, jobType, field string
	}{
		{"canary above count", `canary = 4`, "service", "TaskGroups[0].Update.Canary"},
		{"negative max_parallel", `max_parallel = -1`, "service", "TaskGroups[0].Update.MaxParallel"},
		{"min_healthy_time not below healthy_deadline", `min_healthy_time = "5m"`, "service", "TaskGroups[0].Update.MinHealthyTime"},
		{"auto_promote without canaries", `auto_promote = true`, "service", "TaskGroups[0].Update.AutoPromote"},
		{"progress_deadline below healthy_deadline", `progress_deadline = "1m"`, "service", "TaskGroups[0].Update.ProgressDeadline"},
		{"bad health_check", `health_check = "nope"`, "service", "TaskGroups[0].Update.HealthCheck"},
		{"batch job", `max_parallel = 1`, "batch", "TaskGroups[0].Update"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `job "j" {
  type = "` + c.jobType + `"
  group "g" {
    count = 3
    update { ` + c.block + ` }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}`
			j := mustParse(t, src, nil)
			j.Canonicalize()
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.field+":") {
				t.Fatalf("err = %v, want one naming %s", err, c.field)
			}
		})
	}
	// progress_deadline 0 means "fail on the first unhealthy allocation"
	// and is valid whatever healthy_deadline is.
	j := mustParse(t, `job "j" {
  group "g" {
    update { progress_deadline = "0s" }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}`, nil)
	j.Canonicalize()
	validUpdate(t, j)
}

// TestMigrateBlockValidation checks that a migrate block the client
// cannot judge health by is refused naming its field.
func TestMigrateBlockValidation(t *testing.T) {
	cases := []struct{ name, block, field string }{
		{"manual health_check", `health_check = "manual"`, "TaskGroups[0].Migrate.HealthCheck"},
		{"negative max_parallel", `max_parallel = -1`, "TaskGroups[0].Migrate.MaxParallel"},
		{"negative min_healthy_time", `min_healthy_time = "-1s"`, "TaskGroups[0].Migrate.MinHealthyTime"},
		{"negative healthy_deadline", `healthy_deadline = "-1s"`, "TaskGroups[0].Migrate.HealthyDeadline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := mustParse(t, `job "j" {
  group "g" {
    migrate { `+c.block+` }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}`, nil)
			j.Canonicalize()
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.field+":") {
				t.Fatalf("err = %v, want one naming %s", err, c.field)
			}
		})
	}
}

// validUpdate fails t unless j is valid.
func validUpdate(t *testing.T, j *structs.Job) {
	t.Helper()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
}
