package jobspec

import (
	"errors"
	"strings"
	"testing"
)

// TestRuntimeReferencesKept: a ${...} whose roots are not var or local is
// left for the client (or the scheduler) as written, wherever it appears
// in a string; var and local around it are still resolved.
func TestRuntimeReferencesKept(t *testing.T) {
	cases := []struct {
		name, expr, want string
	}{
		{"meta in original case", `"${NOMAD_META_owner}"`, "${NOMAD_META_owner}"},
		{"port", `"${NOMAD_PORT_http}"`, "${NOMAD_PORT_http}"},
		{"address", `"${NOMAD_ADDR_web}"`, "${NOMAD_ADDR_web}"},
		{"upper-case task variable", `"${NOMAD_JOB_NAME}"`, "${NOMAD_JOB_NAME}"},
		{"lower-case name", `"${my_var}"`, "${my_var}"},
		{"node and attr", `"${node.unique.name}/${attr.kernel.name}"`, "${node.unique.name}/${attr.kernel.name}"},
		{"node meta by index", `"${meta["rack-id"]}"`, `${meta["rack-id"]}`},
		{"env root", `"${env.HOME}"`, "${env.HOME}"},
		{"beside a variable", `"${var.who}-${NOMAD_META_owner}"`, "ops-${NOMAD_META_owner}"},
		{"beside a local", `"${local.base}:${NOMAD_ALLOC_INDEX}"`, "svc:${NOMAD_ALLOC_INDEX}"},
		{"beside a function", `"${upper("a")}${node.class}"`, "A${node.class}"},
		{"escaped", `"$${HOME}"`, "${HOME}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := `variable "who" { default = "ops" }
locals { base = "svc" }
job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      env { V = ` + tc.expr + ` }
      config {
        command = ` + tc.expr + `
        args    = ["-c", ` + tc.expr + `]
        nested  = { deep = [` + tc.expr + `] }
      }
    }
  }
}`
			job, err := Parse("t.hcl", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			task := job.TaskGroups[0].Tasks[0]
			got := []any{task.Env["V"], task.Config["command"], task.Config["args"].([]any)[1],
				task.Config["nested"].(map[string]any)["deep"].([]any)[0]}
			for i, g := range got {
				if g != tc.want {
					t.Errorf("value %d = %q, want %q", i, g, tc.want)
				}
			}
		})
	}
}

// TestRuntimeReferenceErrors: references the parser owns still fail, and
// one ${...} may not mix the two kinds, whichever comes first.
func TestRuntimeReferenceErrors(t *testing.T) {
	cases := []struct {
		name, expr, want string
	}{
		{"undeclared variable", `"${var.nope}"`,
			`Undeclared variable: var.nope is not declared; add a variable "nope" block`},
		{"undeclared variable beside a runtime one", `"${NOMAD_META_owner}-${var.nope}"`,
			`Undeclared variable: var.nope is not declared; add a variable "nope" block`},
		{"undefined local", `"${local.nope}"`,
			`Undefined local value: local.nope is not defined in any locals block`},
		{"runtime first", `"${NOMAD_META_owner == var.who}"`,
			`Mixed interpolation: "NOMAD_META_owner" is resolved when the job runs and "var" when the file is parsed`},
		{"variable first", `"${var.who == node.class}"`,
			`Mixed interpolation: "node" is resolved when the job runs and "var" when the file is parsed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := `variable "who" { default = "ops" }
job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      env { V = ` + tc.expr + ` }
    }
  }
}`
			_, err := Parse("t.hcl", []byte(src), nil)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error = %v, want a *jobspec.Error", err)
			}
			if !strings.Contains(err.Error(), "t.hcl:6:") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant at line 6:\n%s", err, tc.want)
			}
		})
	}
}
