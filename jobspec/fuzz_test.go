package jobspec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/structs"
)

// Fuzz targets for the two ways a job reaches the server as text: Nomad's
// API JSON (DecodeAPIJobBytes, and Parse of a JSON file) and HCL job files.
// `go test` runs every seed (f.Add and testdata/fuzz/<Name>/); `make fuzz`
// explores further. See docs/security.md.

// maxFuzzInput bounds the inputs the targets try: the HTTP API refuses
// bodies over 1 MiB, and 64 KiB is plenty to reach every path while
// keeping each run fast.
const maxFuzzInput = 64 << 10

// jsonSeeds are real JSON jobs: the example job as `job inspect` prints it
// (wrapped and bare), and the shapes parse_test exercises.
func jsonSeeds(f *testing.F) [][]byte {
	job, err := Parse("example.nomad.hcl", []byte(ExampleJob), nil)
	if err != nil {
		f.Fatal(err)
	}
	wrapped := mustJSON(f, map[string]any{"Job": job})
	bare := mustJSON(f, job)
	job.Canonicalize()
	canonical := mustJSON(f, map[string]any{"Job": job})
	seeds := [][]byte{wrapped, bare, canonical,
		[]byte(`{"ID": "web", "Type": "batch", "TaskGroups": [{"Name": "g", "Count": 2,
	  "Tasks": [{"Name": "t", "Driver": "raw_exec", "KillTimeout": 3000000000,
	    "Config": {"command": "/bin/true", "Anything": {"Goes": [1]}}}]}],
	  "Update": null, "Periodic": null, "Spreads": [], "Dispatched": false, "ConsulToken": ""}`),
		[]byte(`{"Job": {"ID": "web", "Update": {"MaxParallel": 2},
		  "TaskGroups": [{"Name": "g", "Services": [{"Name": "s"}], "Tasks": [{"Name": "t", "Vault": {"Policies": ["a"]}}]}]}}`),
		[]byte(`{"ID": "j", "Reschedule": {"Attempts": 3}, "Migrate": {"MaxParallel": null},
		  "TaskGroups": [{"Name": "g", "Count": null, "RestartPolicy": {"Attempts": 1, "Mode": null},
		  "ReschedulePolicy": {"Unlimited": null}, "EphemeralDisk": {"SizeMB": 300},
		  "Tasks": [{"Name": "t", "Driver": "mock", "LogConfig": {"MaxFiles": 10}}]}]}`),
		[]byte(`{"ID": "web", "TaskGroups": [{"Count": "two"}]}`),
		[]byte(`{"Job": [1]}`),
	}
	for _, path := range exampleFiles(f) {
		j, err := ParseFile(path, nil)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, mustJSON(f, map[string]any{"Job": j}))
	}
	return seeds
}

// exampleFiles returns the example job files shipped in examples/.
func exampleFiles(f *testing.F) []string {
	files, err := filepath.Glob("../examples/*.hcl")
	if err != nil || len(files) == 0 {
		f.Fatalf("examples: %v %v", files, err)
	}
	return files
}

// FuzzDecodeAPIJob feeds arbitrary bytes to DecodeAPIJobBytes, the strict
// reader of a job in Nomad's API JSON shape, then canonicalizes and
// validates what it accepts, as the server does. It must never panic; its
// errors, and Validate's, are *structs.ValidationError; decoding the same
// bytes twice gives the same job and the same error.
func FuzzDecodeAPIJob(f *testing.F) {
	for _, s := range jsonSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		defer watchdog(data)()
		job, err := DecodeAPIJobBytes("Job", data)
		again, err2 := DecodeAPIJobBytes("Job", data)
		if errString(err) != errString(err2) || !reflect.DeepEqual(job, again) {
			t.Fatalf("decoding is not deterministic:\n%v\n%v\n%+v\n%+v", err, err2, job, again)
		}
		if err != nil {
			var ve *structs.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *structs.ValidationError: %v", err, err)
			}
			if job != nil {
				t.Fatalf("a job with an error: %+v", job)
			}
			return
		}
		checkCanonicalValidate(t, job)
	})
}

// checkCanonicalValidate canonicalizes and validates job as the server's
// Job.Register does: neither may panic, and Validate returns nil or a
// *structs.ValidationError.
func checkCanonicalValidate(t *testing.T, job *structs.Job) {
	t.Helper()
	if job == nil {
		t.Fatal("no job and no error")
	}
	job.Canonicalize()
	err := job.Validate()
	if err != nil {
		var ve *structs.ValidationError
		if !errors.As(err, &ve) || len(ve.Errors) == 0 {
			t.Fatalf("Validate returned %T: %v", err, err)
		}
	}
	if again := job.Validate(); errString(again) != errString(err) {
		t.Fatalf("Validate is not deterministic:\n%v\n%v", err, again)
	}
}

// Found by FuzzDecodeAPIJob: a JSON job may hold null task groups and
// tasks, and Canonicalize dereferenced them (the server's Job.Register
// refuses them before canonicalizing, but Canonicalize's callers should
// not have to). Validate reports them.
func TestFuzzRegressionNullGroupsAndTasks(t *testing.T) {
	for _, src := range []string{
		`{"ID": "a", "TaskGroups": [null]}`,
		`{"ID": "a", "TaskGroups": [{"Name": "g", "Tasks": [null]}]}`,
	} {
		job, err := DecodeAPIJobBytes("Job", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		job.Canonicalize()
		err = job.Validate()
		if err == nil || !strings.Contains(err.Error(), "must not be null") {
			t.Fatalf("%s: Validate = %v; want a null entry reported", src, err)
		}
	}
}

// FuzzParseJSON feeds arbitrary bytes to Parse as a JSON job file (the
// CLI's and /v1/jobs/parse's path for JSON). It must never panic; errors
// are *Error; an accepted job canonicalizes and validates as above.
func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		defer watchdog(data)()
		job, err := Parse("job.json", data, nil)
		again, err2 := Parse("job.json", data, nil)
		if errString(err) != errString(err2) || !reflect.DeepEqual(job, again) {
			t.Fatalf("parsing is not deterministic:\n%v\n%v", err, err2)
		}
		if err != nil {
			checkJobspecError(t, err)
			return
		}
		checkCanonicalValidate(t, job)
	})
}

// checkJobspecError fails unless err is a *Error with at least one Diag.
func checkJobspecError(t *testing.T, err error) {
	t.Helper()
	var perr *Error
	if !errors.As(err, &perr) || len(perr.Diags) == 0 {
		t.Fatalf("error %T is not a *jobspec.Error with diagnostics: %v", err, err)
	}
}

// fuzzVars are the -var overrides the HCL target parses with, besides
// parsing with none: names the seeds declare, of several types.
var fuzzVars = &Options{Vars: map[string]string{
	"count": "3", "image": "busybox", "dcs": `["dc1", "dc2"]`, "meta": `{a = "b"}`,
}}

// FuzzParseHCL feeds arbitrary bytes to Parse as an HCL job file, with no
// variables and with -var overrides. It must never panic; errors are
// *Error; the same input parses the same way twice; an accepted job
// canonicalizes and validates without panicking.
func FuzzParseHCL(f *testing.F) {
	f.Add([]byte(ExampleJob))
	f.Add([]byte(minimal(`config { command = "/bin/true" }`)))
	f.Add([]byte(`variable "count" { type = number }
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
variable "meta" {
  type    = map(string)
  default = {}
}
locals { name = "web-${var.count}" }
job "j" {
  datacenters = var.dcs
  meta        = merge(var.meta, { owner = upper("ops") })
  group "g" {
    count = var.count
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/echo" args = [local.name, "${attr.kernel.name}"] }
    }
  }
}`))
	for _, path := range exampleFiles(f) {
		f.Add(readFile(f, path))
	}
	// Nesting that overflowed the parser's stack before internal/hcllimit.
	f.Add([]byte(`job "j" { meta = { a = ` + strings.Repeat("[", 60000) + ` } }`))
	f.Add([]byte(`locals { x = ` + strings.Repeat("!", 30000) + `true }` + "\njob \"j\" {}\n"))
	errFiles, err := filepath.Glob("testdata/errors/*.hcl")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range errFiles {
		f.Add(readFile(f, path))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		defer watchdog(data)()
		for _, opts := range []*Options{nil, fuzzVars} {
			job, err := Parse("job.hcl", data, opts)
			again, err2 := Parse("job.hcl", data, opts)
			if errString(err) != errString(err2) || !reflect.DeepEqual(job, again) {
				t.Fatalf("parsing is not deterministic:\n%v\n%v", err, err2)
			}
			if err != nil {
				checkJobspecError(t, err)
				continue
			}
			checkCanonicalValidate(t, job)
		}
	})
}

// fuzzSlowInput is how long one input may take. Past it the watchdog
// crashes the fuzz worker, so that the fuzzer records the input: a job
// file that takes seconds to parse is a denial of service on
// /v1/jobs/parse.
const fuzzSlowInput = 10 * time.Second

// watchdog arms a timer for one input; call the result when done.
func watchdog(data []byte) func() {
	timer := time.AfterFunc(fuzzSlowInput, func() {
		panic(fmt.Sprintf("input took over %s: %q", fuzzSlowInput, data))
	})
	return func() { timer.Stop() }
}

func readFile(f *testing.F, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// errString is err's text, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Found while reviewing what FuzzParseJSON's determinism check covers (a
// short fuzz run had not hit it): keys match
// fields without regard to case, and with two keys for one field the
// decoder's choice followed map order, so the same file gave count 1 or
// 5, or named a different key in its error, from run to run. Such an
// object is now refused, naming both keys.
func TestFuzzRegressionKeysDifferingInCase(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{"ID": "a", "TaskGroups": [{"Name": "g", "count": null, "COUNT": 5, "Tasks": [{"Name": "t", "Driver": "mock"}]}]}`,
			`Job.TaskGroups[0].count: duplicate of "COUNT"`},
		{`{"Job": {"ID": "a"}, "job": {"ID": "b"}}`, `Unsupported field: "job"`},
		{`{"ID": "a", "id": "b"}`, `Job.id: duplicate of "ID"`},
	}
	for _, tc := range cases {
		for range 20 {
			_, err := Parse("job.json", []byte(tc.src), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: err = %v; want %q", tc.src, err, tc.want)
			}
		}
	}
}

// Found while adding the determinism check on Validate to the JSON targets
// (the seed in testdata/fuzz/FuzzDecodeAPIJob/validate-order now guards it):
// with two bad meta keys or env names, the errors came out in map order.
func TestFuzzRegressionValidateOrder(t *testing.T) {
	src := `{"ID": "a", "Meta": {"": "x", "a\u0000": "y", "b\u0000": "z"},
	  "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock", "Env": {"A=1": "x", "B=2": "y", "": "z"}}]}]}`
	job, err := DecodeAPIJobBytes("Job", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	job.Canonicalize()
	want := errString(job.Validate())
	if !strings.Contains(want, `Meta: invalid key ""`) || !strings.Contains(want, `Env: invalid variable name "A=1"`) {
		t.Fatalf("Validate = %s", want)
	}
	for range 20 {
		if got := errString(job.Validate()); got != want {
			t.Fatalf("Validate differs between calls:\n%s\n%s", want, got)
		}
	}
}
