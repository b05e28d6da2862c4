package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJobValidate checks `job validate` against a real dev agent: a valid
// file passes, and a file whose task config does not fit its driver fails
// with the field named, as the server would refuse it on job run.
func TestJobValidate(t *testing.T) {
	addr := startCLIAgent(t)
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.nomad.hcl", `job "v" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`)
	bad := write("bad.nomad.hcl", `job "v" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { comand = "/bin/true" }
    }
  }
}`)
	if code, out, errOut := cli(addr, "job", "validate", good); code != 0 || !strings.Contains(out, "Job validation successful") {
		t.Fatalf("valid file: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut := cli(addr, "job", "validate", bad)
	if code != 1 || !strings.Contains(errOut, "Job validation errors:") || !strings.Contains(errOut, "Config.comand") {
		t.Fatalf("invalid file: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := cli(addr, "job", "status"); code != 0 || strings.Contains(out, "v ") {
		t.Fatalf("validate registered a job: %q", out)
	}
}
