package jobspec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

const parameterizedHCL = `
job "render" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["customer"]
    meta_optional = ["color"]
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/cat" }
      dispatch_payload {
        file = "input/payload.txt"
      }
    }
  }
}
`

// TestParseParameterized: the HCL blocks and Nomad's JSON give the same
// job; payload defaults to optional.
func TestParseParameterized(t *testing.T) {
	hcl, err := Parse("p.hcl", []byte(parameterizedHCL), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &structs.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"customer"}, MetaOptional: []string{"color"}}
	if !reflect.DeepEqual(hcl.ParameterizedJob, want) {
		t.Fatalf("parameterized %+v", hcl.ParameterizedJob)
	}
	if dp := hcl.TaskGroups[0].Tasks[0].DispatchPayload; dp == nil || dp.File != "input/payload.txt" {
		t.Fatalf("dispatch_payload %+v", dp)
	}
	js, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "render", "Name": "render", "Type": "batch",
	  "ParameterizedJob": {"Payload": "required", "MetaRequired": ["customer"], "MetaOptional": ["color"]},
	  "Payload": null, "Dispatched": false, "DispatchIdempotencyToken": "",
	  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec",
	    "Config": {"command": "/bin/cat"}, "DispatchPayload": {"File": "input/payload.txt"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	hcl.Canonicalize()
	js.Canonicalize()
	if !reflect.DeepEqual(hcl, js) {
		t.Fatalf("HCL and JSON differ:\n%+v\n%+v", hcl, js)
	}
	if err := js.Validate(); err != nil {
		t.Fatal(err)
	}
	bare, err := Parse("p.hcl", []byte(strings.Replace(parameterizedHCL, `payload       = "required"`, "", 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	bare.Canonicalize()
	if bare.ParameterizedJob.Payload != "optional" {
		t.Fatalf("default payload %q", bare.ParameterizedJob.Payload)
	}
}

// TestValidateParameterized: Nomad's rules, each naming the field.
func TestValidateParameterized(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"service job", `type = "batch"`, `type = "service"`, `ParameterizedJob: parameterized job can only be used with the "batch" or "sysbatch" scheduler`},
		{"bad payload", `"required"`, `"sometimes"`, `ParameterizedJob.Payload: unknown payload requirement "sometimes"`},
		{"meta in both", `["color"]`, `["color", "customer"]`, "ParameterizedJob.MetaOptional: required and optional meta keys should be disjoint; in both: customer"},
		{"payload file escapes", `"input/payload.txt"`, `"../../secrets/x"`, `TaskGroups[0].Tasks[0].DispatchPayload.File: dispatch_payload file "../../secrets/x" escapes`},
		{"payload file absolute", `"input/payload.txt"`, `"/etc/passwd"`, "escapes the task's local directory"},
		{"with periodic", `  group "g" {`, "  periodic {\n    cron = \"@daily\"\n  }\n  group \"g\" {", "Periodic: a job cannot be both periodic and parameterized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := Parse("p.hcl", []byte(strings.Replace(parameterizedHCL, tc.from, tc.to, 1)), nil)
			if err != nil {
				t.Fatal(err)
			}
			job.Canonicalize()
			if err := job.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
