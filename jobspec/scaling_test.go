package jobspec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

const scalingHCL = `
job "web" {
  group "api" {
    count = 3
    scaling {
      min     = 2
      max     = 10
      policy {
        cooldown = "1m"
        check "avg_cpu" {
          source = "nomad-apm"
          query  = "avg_cpu"
          strategy "target-value" {
            target = 70
          }
        }
      }
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}
`

// The scaling block reads the same from HCL and from Nomad's JSON (the
// policy nested under its blocks' labels, as Nomad's parser shapes it),
// with Nomad's defaults for what is left out.
func TestScalingBlockHCLAndJSON(t *testing.T) {
	job, err := Parse("web.nomad.hcl", []byte(scalingHCL), nil)
	if err != nil {
		t.Fatal(err)
	}
	job.Canonicalize()
	got := job.TaskGroups[0].Scaling
	want := &structs.ScalingPolicy{Type: structs.ScalingPolicyTypeHorizontal, Min: 2, Max: 10, Enabled: true,
		Policy: map[string]any{"cooldown": "1m", "check": []any{map[string]any{"avg_cpu": []any{map[string]any{
			"source": "nomad-apm", "query": "avg_cpu",
			"strategy": []any{map[string]any{"target-value": []any{map[string]any{"target": got.Policy["check"].([]any)[0].(map[string]any)["avg_cpu"].([]any)[0].(map[string]any)["strategy"].([]any)[0].(map[string]any)["target-value"].([]any)[0].(map[string]any)["target"]}}}},
		}}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("HCL scaling = %#v\nwant %#v", got, want)
	}
	if err := job.Validate(); err != nil {
		t.Fatal(err)
	}

	fromJSON, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "web", "TaskGroups": [{"Name": "api", "Count": 3,
		"Scaling": {"Min": 2, "Max": 10, "Enabled": null, "Type": "", "ID": "", "Target": null,
		"Policy": {"cooldown": "1m", "check": [{"avg_cpu": [{"source": "nomad-apm", "query": "avg_cpu",
		"strategy": [{"target-value": [{"target": 70}]}]}]}]}},
		"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON.Canonicalize()
	js := fromJSON.TaskGroups[0].Scaling
	if js.Min != 2 || js.Max != 10 || !js.Enabled || js.Type != "horizontal" || js.Policy["cooldown"] != "1m" {
		t.Fatalf("JSON scaling = %#v", js)
	}

	// Defaults: min is the count; max is required.
	noMax := strings.Replace(scalingHCL, "max     = 10", "", 1)
	noMax = strings.Replace(noMax, "min     = 2", "", 1)
	job, err = Parse("web.nomad.hcl", []byte(noMax), nil)
	if err != nil {
		t.Fatal(err)
	}
	job.Canonicalize()
	if sp := job.TaskGroups[0].Scaling; sp.Min != 3 || sp.Max != -1 {
		t.Fatalf("defaults: min %d max %d", sp.Min, sp.Max)
	}
	if err := job.Validate(); err == nil || !strings.Contains(err.Error(), "TaskGroups[0].Scaling.Max: maximum count must be specified") {
		t.Fatalf("missing max: %v", err)
	}
	fromJSON, err = DecodeAPIJobBytes("Job", []byte(`{"ID": "web", "TaskGroups": [{"Name": "api", "Count": 4, "Scaling": {"Max": 3},
		"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON.Canonicalize()
	err = fromJSON.Validate()
	if sp := fromJSON.TaskGroups[0].Scaling; sp.Min != 4 || !sp.Enabled || err == nil ||
		!strings.Contains(err.Error(), "must not be less than minimum count") {
		t.Fatalf("JSON defaults: %#v, %v", sp, err)
	}

	// Server-owned policy fields are refused by name.
	_, err = DecodeAPIJobBytes("Job", []byte(`{"ID": "web", "TaskGroups": [{"Name": "api", "Scaling": {"Max": 3, "ID": "x"},
		"Tasks": [{"Name": "t", "Driver": "raw_exec"}]}]}`))
	if err == nil || !strings.Contains(err.Error(), "Job.TaskGroups[0].Scaling.ID: Drover does not support") {
		t.Fatalf("policy ID: %v", err)
	}
}
