package jobspec

import (
	"strings"
	"testing"
)

func TestTaskIdentityBlock(t *testing.T) {
	src := `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        env  = true
        file = true
      }
    }
  }
}`
	job, err := Parse("j.hcl", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := job.TaskGroups[0].Tasks[0].Identity
	if id == nil || !id.Env || !id.File || id.Name != "" {
		t.Fatalf("identity %+v", id)
	}
	// The JSON path gives the same.
	fromJSON, err := DecodeAPIJobBytes("", []byte(`{"ID":"j","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec",
		"Identity":{"Name":"","Audience":null,"Env":true,"File":true,"TTL":0}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := fromJSON.TaskGroups[0].Tasks[0].Identity; got == nil || *got != *id {
		t.Fatalf("JSON identity %+v, HCL %+v", got, id)
	}

	refused := []struct{ src, want string }{
		{`identity { aud = ["x"] }`, `Drover does not support the "aud" argument`},
		{`identity { ttl = "1h" }`, `Drover does not support the "ttl" argument`},
		{`identity {
  name = "vault"
  file = true
}`, `Drover does not support named workload identities (identity "vault")`},
	}
	for _, r := range refused {
		_, err := Parse("j.hcl", []byte(strings.Replace(src, "identity {\n        env  = true\n        file = true\n      }", r.src, 1)), nil)
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: %v, want %q", r.src, err, r.want)
		}
	}
	_, err = DecodeAPIJobBytes("", []byte(`{"ID":"j","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec",
		"Identity":{"Audience":["vault.io"]}}]}]}`))
	if err == nil || !strings.Contains(err.Error(), "Identity.Audience") || !strings.Contains(err.Error(), "Drover does not support identity audiences") {
		t.Fatalf("JSON audience: %v", err)
	}
}
