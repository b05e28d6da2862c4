package jobspec

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
	"github.com/drover-project/drover/structs/driverspec"
)

// corpusVars are -var values for corpus files that declare variables
// without defaults (file name -> name -> value).
var corpusVars = map[string]map[string]string{
	"e2e-jobsubmissions-xyz.nomad.hcl": {"X": "x-value", "Y": "3", "Z": "true"},
	"e2e-secret-custom.nomad.hcl":      {"secret_value": "s3cr3t"},
	"e2e-pledge-curl.nomad.hcl":        {"address": "https://example.com"},
	"e2e-docker-config.nomad.hcl":      {"registry_address": "localhost:5000", "user": "root"},
	"e2e-workload-id-node-meta.nomad.hcl": {
		"foo_key": "foo", "empty_key": "empty", "unset_key": "unset",
		"foo_constraint":   "${meta.foo}",
		"empty_constraint": "${meta.empty}",
		"unset_constraint": "${meta.unset}",
	},
}

// nomadInvalid lists corpus files that Nomad's own server rejects (they are
// parser fixtures in Nomad's repository), with the part of Drover's
// validation error that says why; Drover must reject them too.
var nomadInvalid = map[string]string{
	// The batch default of one attempt stays, and Nomad says "If
	// Attempts >0, Unlimited cannot also be set to true".
	"jobspec-reschedule-job-unlimited.nomad.hcl": "must be 0 when Unlimited is true",
	// Nomad: Job type "batch" does not allow migrate block.
	"jobspec-migrate-job.nomad.hcl": `job type "batch" does not allow a migrate block`,
	// Nomad: Parameterized job can only be used with "batch" or
	// "sysbatch" scheduler (the file is a service job).
	"jobspec2-parameterized.nomad.hcl": `parameterized job can only be used with the "batch" or "sysbatch" scheduler`,
	// Nomad: the group's count (1) is below its scaling block's min (2).
	"e2e-scaling-default-1.nomad.hcl": "task group count must not be less than minimum count in scaling policy",
}

// driverInvalid lists corpus files whose task config Nomad's server takes
// but Nomad's client refuses when the task starts (the driver's schema:
// a required key missing), with the part of Drover's error that says why;
// Drover refuses them at registration.
var driverInvalid = map[string]string{
	// A parser fixture: a docker task without config, and docker's image
	// is required.
	"jobspec-resources-cores.nomad.hcl": "task.Config.image: is required",
}

// knownGaps lists corpus files that Nomad's server rejects and Drover's
// accepts, with Nomad's reason. Each is a difference in structs.Job.Validate
// to close; the test logs them and fails once Drover rejects one, so that
// the entry moves to nomadInvalid.
var knownGaps = map[string]string{}

// refusal is how every diagnostic for a corpus file Drover refuses must
// read: the feature is Nomad's, and Drover says it does not support it.
const refusal = "Drover does not support"

// TestNomadCorpus parses every job file in testdata/nomad, copied from
// Nomad's own repository. Each must either parse into a job that the
// server accepts (Canonicalize, then Validate) or be refused, every
// diagnostic naming what Drover does not support. Anything else (an
// "unexpected" argument that Nomad has, a validation error) is a bug.
func TestNomadCorpus(t *testing.T) {
	files := corpusFiles(t)
	checkCorpusTables(t, files)
	var accepted, refused, invalidToo, gaps int
	features := map[string]int{}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".nomad.hcl"), func(t *testing.T) {
			job, err := ParseFile(file, &Options{Vars: corpusVars[name]})
			if err == nil {
				job.Canonicalize()
				verr := job.Validate()
				if gap, ok := knownGaps[name]; ok {
					if verr != nil {
						t.Fatalf("Drover now rejects this file; move it from knownGaps to nomadInvalid:\n%v", verr)
					}
					t.Logf("known gap, accepted: %s", gap)
					gaps++
					return
				}
				switch why, invalid := nomadInvalid[name]; {
				case invalid && verr == nil:
					t.Fatalf("Nomad rejects this job (%s), Drover accepts it", why)
				case invalid && !strings.Contains(verr.Error(), why):
					t.Fatalf("rejected for another reason than %q:\n%v", why, verr)
				case invalid:
					invalidToo++
				case verr != nil && refusedByServer(verr, features):
					refused++
				case verr != nil:
					t.Fatalf("parsed, but the server rejects it:\n%v", verr)
				default:
					// The server also checks each task's config against its
					// built-in driver's schema (server/job_validate.go).
					why, bad := driverInvalid[name]
					switch derr := driverConfigErrors(job); {
					case bad && (derr == nil || !strings.Contains(derr.Error(), why)):
						t.Fatalf("Nomad's client refuses this task config (%s); Drover: %v", why, derr)
					case bad:
						invalidToo++
					case derr == nil:
						accepted++
					case refusedByServer(derr, features):
						refused++
					default:
						t.Fatalf("parsed, but the server rejects a driver config:\n%v", derr)
					}
				}
				return
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %T is not *jobspec.Error: %v", err, err)
			}
			seen := map[string]bool{}
			for _, d := range perr.Diags {
				if !strings.Contains(d.Detail, refusal) {
					t.Errorf("diagnostic does not say %q: %s", refusal, d)
					continue
				}
				seen[refusedFeature(d.Detail)] = true
			}
			if !t.Failed() {
				refused++
				for f := range seen {
					features[f]++ // files refused for f
				}
			}
		})
	}
	t.Logf("Nomad corpus: %d files, %d accepted, %d refused, %d invalid in Nomad too, %d known gaps",
		len(files), accepted, refused, invalidToo, gaps)
	t.Logf("refused features (files): %s", topFeatures(features, 20))
}

// refusedByServer reports whether every problem job validation found says
// what Drover does not support (bridge networking, ...), counting them in
// features.
func refusedByServer(verr error, features map[string]int) bool {
	var ve *structs.ValidationError
	if !errors.As(verr, &ve) {
		return false
	}
	for _, m := range ve.Messages() {
		if !strings.Contains(m, refusal) {
			return false
		}
	}
	for _, fe := range ve.Errors {
		features[fe.Field[strings.LastIndex(fe.Field, ".")+1:]]++
	}
	return true
}

// driverConfigErrors validates every task's config whose driver is built
// in, as the server does at registration.
func driverConfigErrors(job *structs.Job) error {
	var all []structs.FieldError
	for _, tg := range job.TaskGroups {
		for _, task := range tg.Tasks {
			if driverspec.Builtin(task.Driver) == nil {
				continue
			}
			var ve *structs.ValidationError
			if err := driverspec.ValidateTaskConfig(task.Driver, task.Config); errors.As(err, &ve) {
				for _, fe := range ve.Errors {
					all = append(all, structs.FieldError{Field: task.Name + "." + fe.Field, Message: fe.Message})
				}
			} else if err != nil {
				return err
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	return &structs.ValidationError{Errors: all}
}

func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/nomad/*.nomad.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	return files
}

// checkCorpusTables reports table entries for files that are not in the
// corpus, and corpus files that SOURCES.md does not name.
func checkCorpusTables(t *testing.T, files []string) {
	t.Helper()
	names := map[string]bool{}
	for _, f := range files {
		names[filepath.Base(f)] = true
	}
	for name := range corpusVars {
		if !names[name] {
			t.Errorf("corpusVars names %s, which is not in testdata/nomad", name)
		}
	}
	for _, table := range []map[string]string{nomadInvalid, knownGaps, driverInvalid} {
		for name := range table {
			if !names[name] {
				t.Errorf("%s is listed but not in testdata/nomad", name)
			}
		}
	}
	sources, err := os.ReadFile(filepath.Join("testdata", "nomad", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range names {
		if !strings.Contains(string(sources), "`"+name+"`") {
			t.Errorf("SOURCES.md does not say where %s comes from", name)
		}
	}
}

var quotedName = regexp.MustCompile(`"([^"]+)"`)

// refusedFeature names the refused feature in a diagnostic's detail: the
// quoted block or argument name, or the whole detail.
func refusedFeature(detail string) string {
	if m := quotedName.FindStringSubmatch(detail); m != nil {
		return m[1]
	}
	return detail
}

func topFeatures(counts map[string]int, n int) string {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) > n {
		names = names[:n]
	}
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + strconv.Itoa(counts[k])
	}
	return strings.Join(parts, ", ")
}
