package jobspec

import (
	"reflect"
	"testing"

	"github.com/drover-project/drover/structs"
)

// TestParseNomadFunctions checks the functions Nomad has beyond cty's
// standard library against the values Nomad's own give.
func TestParseNomadFunctions(t *testing.T) {
	job := mustParse(t, minimal(`
      meta {
        b64    = base64encode("user:pass")
        plain  = base64decode("dXNlcjpwYXNz")
        url    = urlencode("a b&c=d/e")
        md5    = md5("hello")
        sha1   = sha1("hello")
        sha256 = sha256("hello")
        sha512 = substr(sha512("hello"), 0, 16)
        rev    = reverse("abc")
        conv   = convert(3, string)
      }`), nil)
	want := map[string]string{
		"b64":    "dXNlcjpwYXNz",
		"plain":  "user:pass",
		"url":    "a+b%26c%3Dd%2Fe",
		"md5":    "5d41402abc4b2a76b9719d911017c592",
		"sha1":   "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d",
		"sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
		"sha512": "9b71d224bd62f378",
		"rev":    "cba", // Nomad's reverse reverses a string
		"conv":   "3",
	}
	if got := job.TaskGroups[0].Tasks[0].Meta; !reflect.DeepEqual(got, want) {
		t.Errorf("meta:\n got %v\nwant %v", got, want)
	}
}

// TestParseJobLevelTask checks that a task written directly in the job
// becomes a group of its own, named after it, before the other groups.
func TestParseJobLevelTask(t *testing.T) {
	job := mustParse(t, `
job "j" {
  reschedule {
    attempts = 2
    interval = "1h"
  }
  group "g" {
    task "inner" {
      driver = "raw_exec"
    }
  }
  task "solo" {
    driver = "raw_exec"
  }
}`, nil)
	var names []string
	for _, tg := range job.TaskGroups {
		names = append(names, tg.Name)
	}
	if want := []string{"solo", "g"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("groups %v, want %v", names, want)
	}
	solo := job.TaskGroups[0]
	if solo.Count != 1 || len(solo.Tasks) != 1 || solo.Tasks[0].Name != "solo" {
		t.Errorf("solo group: %+v", solo)
	}
	want := structs.DefaultReschedulePolicy(structs.JobTypeService)
	want.Attempts, want.Interval, want.Unlimited = 2, 3600e9, false
	if !reflect.DeepEqual(solo.ReschedulePolicy, want) {
		t.Errorf("reschedule %+v, want the job's %+v", solo.ReschedulePolicy, want)
	}
}

// TestParseUnsupportedFunctionInTry checks that try() cannot hide a call
// to a function Drover does not have: Nomad would call it and get another
// value than the fallback.
func TestParseUnsupportedFunctionInTry(t *testing.T) {
	src := `
locals {
  conf = try(file("app.conf"), "")
}
job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      meta {
        ok = can(uuidv4())
      }
    }
  }
}`
	_, err := Parse("try.hcl", []byte(src), nil)
	want := `try.hcl:3:14: Unsupported function: Drover does not support the "file" function
try.hcl:10:18: Unsupported function: Drover does not support the "uuidv4" function`
	if err == nil || err.Error() != want {
		t.Fatalf("got error:\n%v\nwant:\n%s", err, want)
	}
}
