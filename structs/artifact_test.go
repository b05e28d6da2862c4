package structs

import (
	"reflect"
	"strings"
	"testing"
)

func artifactJob(edit func(a *TaskArtifact)) *Job {
	j := specJob()
	a := &TaskArtifact{GetterSource: "https://example.com/app.tar.gz", RelativeDest: DefaultArtifactDestDir}
	if edit != nil {
		edit(a)
	}
	j.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{a}
	j.Canonicalize()
	return j
}

func TestArtifactCanonicalize(t *testing.T) {
	j := artifactJob(func(a *TaskArtifact) {
		a.GetterOptions, a.GetterHeaders = map[string]string{}, map[string]string{}
	})
	got := j.TaskGroups[0].Tasks[0].Artifacts[0]
	want := &TaskArtifact{GetterSource: "https://example.com/app.tar.gz", RelativeDest: "local/", GetterMode: "any"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("canonicalized artifact\n got %+v\nwant %+v", got, want)
	}
}

func TestDefaultArtifactDest(t *testing.T) {
	for _, tc := range []struct{ src, mode, want string }{
		{"https://example.com/app.tar.gz", "any", "local/"},
		{"https://example.com/app.tar.gz", "dir", "local/"},
		{"https://example.com/bin/hello", "file", "local/hello"},
		{"https://example.com/bin/hello?archive=false", "file", "local/hello?archive=false"},
	} {
		if got := DefaultArtifactDest(tc.src, tc.mode); got != tc.want {
			t.Errorf("DefaultArtifactDest(%q, %q) = %q; want %q", tc.src, tc.mode, got, tc.want)
		}
	}
}

func TestArtifactValidate(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	cases := []struct {
		name string
		edit func(a *TaskArtifact)
		want string // "" = valid; else "Field: part of the message"
	}{
		{"defaults", nil, ""},
		{"file mode", func(a *TaskArtifact) { a.GetterMode = "file"; a.RelativeDest = "local/app" }, ""},
		{"into the alloc dir", func(a *TaskArtifact) { a.RelativeDest = "../alloc/data" }, ""},
		{"interpolated destination", func(a *TaskArtifact) { a.RelativeDest = "${NOMAD_ALLOC_DIR}/go.mod" }, ""},
		{"the task dir itself", func(a *TaskArtifact) { a.RelativeDest = "" }, ""},
		{"checksum", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "sha256:" + sha} }, ""},
		{"interpolated checksum", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "${NOMAD_META_sum}"} }, ""},
		{"git", func(a *TaskArtifact) { a.GetterSource = "git::https://github.com/hashicorp/go-set" }, ""},
		{"headers", func(a *TaskArtifact) { a.GetterHeaders = map[string]string{"X-Token": "${NOMAD_META_token}"} }, ""},
		{"no source", func(a *TaskArtifact) { a.GetterSource = " " }, "Artifacts[0].GetterSource: must be set"},
		{"escapes", func(a *TaskArtifact) { a.RelativeDest = "../../etc" }, `Artifacts[0].RelativeDest: destination "../../etc" escapes the allocation directory`},
		{"escapes through local", func(a *TaskArtifact) { a.RelativeDest = "local/../../.." }, "Artifacts[0].RelativeDest: destination"},
		{"bad mode", func(a *TaskArtifact) { a.GetterMode = "folder" }, `Artifacts[0].GetterMode: must be one of any, file, dir; got "folder"`},
		{"checksum without type", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": sha} }, `Artifacts[0].GetterOptions["checksum"]: checksum must be given as "type:value"`},
		{"checksum type", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "crc32:00ff00ff"} }, `unsupported checksum type "crc32"`},
		{"checksum length", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "md5:" + sha} }, `invalid md5 checksum`},
		{"checksum not hex", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "sha256:xyz"} }, `invalid sha256 checksum "xyz"`},
		{"empty checksum", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": " "} }, "checksum must not be empty"},
		{"s3", func(a *TaskArtifact) { a.GetterSource = "s3::https://s3.amazonaws.com/bucket/foo" }, "Artifacts[0].GetterSource: Drover does not support S3 artifact sources"},
		{"gcs", func(a *TaskArtifact) { a.GetterSource = "gs://bucket/foo" }, "Drover does not support Google Cloud Storage artifact sources"},
		{"header name", func(a *TaskArtifact) { a.GetterHeaders = map[string]string{"Bad Header": "x"} }, `Artifacts[0].GetterHeaders: invalid header name "Bad Header"`},
		{"header value", func(a *TaskArtifact) { a.GetterHeaders = map[string]string{"X": "a\r\nb"} }, `invalid value for header "X"`},
		{"source with newline", func(a *TaskArtifact) { a.GetterSource = "http://x/\nfoo" }, "GetterSource: must not contain NUL or line breaks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := artifactJob(tc.edit).Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "TaskGroups[0].Tasks[0]."+tc.want) && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tc.want)
			}
		})
	}
	j := artifactJob(nil)
	j.TaskGroups[0].Tasks[0].Artifacts = append(j.TaskGroups[0].Tasks[0].Artifacts, nil)
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "Artifacts[1]: must not be null") {
		t.Fatalf("null artifact: %v", err)
	}
}

func TestArtifactCopyIsDeep(t *testing.T) {
	orig := &TaskArtifact{GetterSource: "s", GetterOptions: map[string]string{"a": "1"}, GetterHeaders: map[string]string{"h": "1"}}
	c := orig.Copy()
	c.GetterOptions["a"], c.GetterHeaders["h"] = "2", "2"
	if orig.GetterOptions["a"] != "1" || orig.GetterHeaders["h"] != "1" {
		t.Fatalf("copy shares memory with the original: %+v", orig)
	}
	task := &Task{Artifacts: []*TaskArtifact{orig}}
	if tc := task.Copy(); tc.Artifacts[0] == orig {
		t.Fatal("Task.Copy shares its artifacts")
	}
}
