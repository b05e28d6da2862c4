package jobspec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

const periodicHCL = `
job "report" {
  type = "batch"
  periodic {
    crons            = ["*/15 * * * *", "0 3 * * 1-5"]
    prohibit_overlap = true
    time_zone        = "Europe/Paris"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
`

// TestParsePeriodic: the HCL block and Nomad's JSON (as its CLI sends it,
// nulls included) give the same job, with Nomad's defaults.
func TestParsePeriodic(t *testing.T) {
	hcl, err := Parse("p.hcl", []byte(periodicHCL), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &structs.PeriodicConfig{Enabled: true, Specs: []string{"*/15 * * * *", "0 3 * * 1-5"},
		SpecType: "cron", ProhibitOverlap: true, TimeZone: "Europe/Paris"}
	if !reflect.DeepEqual(hcl.Periodic, want) {
		t.Fatalf("HCL periodic %+v, want %+v", hcl.Periodic, want)
	}
	js, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "report", "Name": "report", "Type": "batch",
	  "Periodic": {"Enabled": null, "Spec": null, "Specs": ["*/15 * * * *", "0 3 * * 1-5"], "SpecType": null,
	    "ProhibitOverlap": true, "TimeZone": "Europe/Paris"},
	  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	hcl.Canonicalize()
	js.Canonicalize()
	if !reflect.DeepEqual(hcl, js) {
		t.Fatalf("HCL and JSON differ:\nHCL  %+v\nJSON %+v", hcl.Periodic, js.Periodic)
	}
	if err := js.Validate(); err != nil {
		t.Fatal(err)
	}

	// The older cron argument; enabled = false.
	old, err := Parse("p.hcl", []byte(strings.Replace(periodicHCL, `crons            = ["*/15 * * * *", "0 3 * * 1-5"]`,
		`cron = "@daily"
    enabled = false`, 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := old.Periodic; p.Spec != "@daily" || p.Specs != nil || p.Enabled {
		t.Fatalf("periodic %+v", p)
	}
}

// TestValidatePeriodic: Nomad's rules, each error naming the field.
func TestValidatePeriodic(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"bad cron", `crons            = ["*/15 * * * *", "0 3 * * 1-5"]`, `cron = "every day"`, "Periodic.Spec: invalid cron spec"},
		{"bad cron in crons", `"0 3 * * 1-5"`, `"0 3 * * 1-9"`, "Periodic.Specs[1]: invalid cron spec"},
		{"unknown time zone", `"Europe/Paris"`, `"Mars/Olympus"`, `Periodic.TimeZone: invalid time zone "Mars/Olympus"`},
		{"no spec", `crons            = ["*/15 * * * *", "0 3 * * 1-5"]`, ``, "Periodic.Spec: must specify a spec"},
		{"cron and crons", `prohibit_overlap = true`, `cron = "@daily"`, "Periodic.Specs: only one of cron and crons"},
		{"service job", `type = "batch"`, `type = "service"`, `Periodic: periodic can only be used with the "batch" or "sysbatch" scheduler`},
		{"system job", `type = "batch"`, `type = "system"`, `Periodic: periodic can only be used with the "batch" or "sysbatch" scheduler`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(periodicHCL, tc.from, tc.to, 1)
			job, err := Parse("p.hcl", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			job.Canonicalize()
			err = job.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	// A disabled block is not checked (Nomad).
	job, _ := Parse("p.hcl", []byte(strings.Replace(periodicHCL, `"0 3 * * 1-5"`, `"nonsense"`, 1)), nil)
	job.Periodic.Enabled = false
	job.Canonicalize()
	if err := job.Validate(); err != nil {
		t.Fatalf("disabled block validated: %v", err)
	}
}
