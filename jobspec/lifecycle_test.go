package jobspec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
)

const lifecycleHCL = `
job "web" {
  group "g" {
    task "init" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      lifecycle {
        hook = "prestart"
      }
    }
    task "proxy" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
    }
    task "main" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
    task "cleanup" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      lifecycle {
        hook = "poststop"
      }
    }
  }
}
`

// TestParseLifecycle: the HCL lifecycle block and Nomad's JSON
// (Task.Lifecycle {Hook, Sidecar}) give the same job.
func TestParseLifecycle(t *testing.T) {
	hcl, err := Parse("l.hcl", []byte(lifecycleHCL), nil)
	if err != nil {
		t.Fatal(err)
	}
	tasks := hcl.TaskGroups[0].Tasks
	want := []*structs.TaskLifecycleConfig{{Hook: "prestart"}, {Hook: "prestart", Sidecar: true}, nil, {Hook: "poststop"}}
	for i, w := range want {
		if !reflect.DeepEqual(tasks[i].Lifecycle, w) {
			t.Fatalf("task %s lifecycle %+v; want %+v", tasks[i].Name, tasks[i].Lifecycle, w)
		}
	}
	js, err := DecodeAPIJobBytes("Job", []byte(`{"ID": "web", "Name": "web",
	  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [
	    {"Name": "init", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "Lifecycle": {"Hook": "prestart", "Sidecar": false}},
	    {"Name": "proxy", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}, "Lifecycle": {"Hook": "prestart", "Sidecar": true}},
	    {"Name": "main", "Driver": "raw_exec", "Config": {"command": "/bin/sleep"}, "Lifecycle": null},
	    {"Name": "cleanup", "Driver": "raw_exec", "Config": {"command": "/bin/true"}, "Lifecycle": {"Hook": "poststop"}}]}]}`))
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
}

// TestValidateLifecycle: Nomad's rules, each naming the field.
func TestValidateLifecycle(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"unknown hook", `hook = "poststop"`, `hook = "afterwards"`, `TaskGroups[0].Tasks[3].Lifecycle.Hook: invalid lifecycle hook "afterwards"`},
		{"no hook", `hook = "poststop"`, ``, `TaskGroups[0].Tasks[3].Lifecycle.Hook: a lifecycle block needs a hook`},
		{"no main task", "config { command = \"/bin/sleep\" }\n    }\n    task \"cleanup\"",
			"config { command = \"/bin/sleep\" }\n      lifecycle { hook = \"poststart\" }\n    }\n    task \"cleanup\"",
			"TaskGroups[0].Tasks: a group needs at least one main task"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(lifecycleHCL, tc.from, tc.to, 1)
			if src == lifecycleHCL {
				t.Fatal("replacement did not apply")
			}
			job, err := Parse("l.hcl", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			job.Canonicalize()
			if err := job.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	// An unknown argument in the block is refused by the parser.
	if _, err := Parse("l.hcl", []byte(strings.Replace(lifecycleHCL, "sidecar = true", "sidecar = true\n        when = 1", 1)), nil); err == nil || !strings.Contains(err.Error(), "when") {
		t.Fatalf("unknown argument: %v", err)
	}
}
