package jobspec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/structs"
	nomad "github.com/hashicorp/nomad/api"
)

const artifactHCL = `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      artifact {
        source = "https://example.com/app.tar.gz"
        options {
          checksum = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        }
        headers {
          X-Token = "${NOMAD_META_token}"
        }
      }
      artifact {
        source = "https://example.com/bin/hello"
        mode   = "file"
      }
      artifact {
        source      = "git::https://example.com/repo.git"
        destination = "local/repo"
        mode        = "dir"
        options     = { ref = "v1.0.0" }
        insecure    = true
        chown       = true
      }
      artifact {
        source      = "https://example.com/x"
        destination = ""
        options {}
      }
    }
  }
}`

// artifactAPIJob is the same job as Nomad's CLI sends it: api.Job with
// only what the file sets, nulls elsewhere (no Canonicalize).
func artifactAPIJob() *nomad.Job {
	return &nomad.Job{ID: new("j"), TaskGroups: []*nomad.TaskGroup{{Name: new("g"), Tasks: []*nomad.Task{{
		Name: "t", Driver: "raw_exec",
		Artifacts: []*nomad.TaskArtifact{
			{GetterSource: new("https://example.com/app.tar.gz"),
				GetterOptions: map[string]string{"checksum": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
				GetterHeaders: map[string]string{"X-Token": "${NOMAD_META_token}"}},
			{GetterSource: new("https://example.com/bin/hello"), GetterMode: new("file")},
			{GetterSource: new("git::https://example.com/repo.git"), RelativeDest: new("local/repo"), GetterMode: new("dir"),
				GetterOptions: map[string]string{"ref": "v1.0.0"}, GetterInsecure: new(true), Chown: true},
			{GetterSource: new("https://example.com/x"), RelativeDest: new(""), GetterOptions: map[string]string{}},
		},
	}}}}}
}

// TestArtifactHCLAndJSONAgree parses artifact blocks from HCL and from
// Nomad's API JSON and expects one structs.Job, with Nomad's server
// defaults for what is left out: mode any, destination local/ (or
// local/<file> in file mode), no empty options.
func TestArtifactHCLAndJSONAgree(t *testing.T) {
	fromHCL := mustParse(t, artifactHCL, nil)
	buf, err := json.Marshal(map[string]any{"Job": artifactAPIJob()})
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Parse("job.json", buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromHCL.Canonicalize()
	fromJSON.Canonicalize()
	want := []*structs.TaskArtifact{
		{GetterSource: "https://example.com/app.tar.gz", GetterMode: "any", RelativeDest: "local/",
			GetterOptions: map[string]string{"checksum": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			GetterHeaders: map[string]string{"X-Token": "${NOMAD_META_token}"}},
		{GetterSource: "https://example.com/bin/hello", GetterMode: "file", RelativeDest: "local/hello"},
		{GetterSource: "git::https://example.com/repo.git", GetterMode: "dir", RelativeDest: "local/repo",
			GetterOptions: map[string]string{"ref": "v1.0.0"}, GetterInsecure: true, Chown: true},
		{GetterSource: "https://example.com/x", GetterMode: "any", RelativeDest: ""},
	}
	for name, job := range map[string]*structs.Job{"hcl": fromHCL, "json": fromJSON} {
		if got := job.TaskGroups[0].Tasks[0].Artifacts; !reflect.DeepEqual(got, want) {
			t.Errorf("%s artifacts\n got %s\nwant %s", name, mustJSON(t, got), mustJSON(t, want))
		}
	}
	if !reflect.DeepEqual(fromHCL, fromJSON) {
		t.Fatalf("HCL and JSON differ\n hcl %s\njson %s", mustJSON(t, fromHCL), mustJSON(t, fromJSON))
	}
	if err := fromHCL.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestArtifactBadInput: an artifact block's mistakes are refused naming
// the argument (parse) or the field (validation at registration).
func TestArtifactBadInput(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"typo", minimal(`artifact {
  source = "https://example.com/x"
  destinaton = "local/x"
}`), `An argument named "destinaton" is not expected in an artifact block; did you mean "destination"?`},
		{"options twice", minimal(`artifact {
  source = "https://example.com/x"
  options = { archive = "false" }
  options { archive = "false" }
}`), "options is already set as an argument"},
		{"nested block in headers", minimal(`artifact {
  source = "https://example.com/x"
  headers {
    inner {}
  }
}`), "headers holds only name = value pairs"},
		{"no source", minimal(`artifact {
  destination = "local/x"
}`), "Artifacts[0].GetterSource: must be set"},
		{"escape", minimal(`artifact {
  source      = "https://example.com/x"
  destination = "../../../etc"
}`), `Artifacts[0].RelativeDest: destination "../../../etc" escapes the allocation directory`},
		{"mode", minimal(`artifact {
  source = "https://example.com/x"
  mode   = "files"
}`), `Artifacts[0].GetterMode: must be one of any, file, dir; got "files"`},
		{"checksum", minimal(`artifact {
  source  = "https://example.com/x"
  options { checksum = "sha256:abc" }
}`), `Artifacts[0].GetterOptions["checksum"]: invalid sha256 checksum "abc"`},
		{"s3", minimal(`artifact {
  source = "s3::https://s3.amazonaws.com/bucket/key"
}`), "Drover does not support S3 artifact sources"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job, err := Parse("a.hcl", []byte(tc.src), nil)
			if err == nil {
				job.Canonicalize()
				err = job.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want it to say %q", err, tc.want)
			}
		})
	}
}
