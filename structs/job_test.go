package structs

import (
	"maps"
	"testing"
)

func specJob() *Job {
	j := &Job{ID: "web", TaskGroups: []*TaskGroup{{Name: "g", Count: 1,
		Tasks: []*Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}}}}}}
	j.Canonicalize()
	return j
}

func TestJobSpecChanged(t *testing.T) {
	cases := []struct {
		name string
		edit func(j *Job)
		want bool
	}{
		{"nothing", func(*Job) {}, false},
		{"server fields", func(j *Job) {
			j.Status, j.StatusDescription, j.Stable, j.Version, j.SubmitTime = JobStatusRunning, "x", true, 7, 99
			j.CreateIndex, j.ModifyIndex, j.JobModifyIndex = 3, 4, 5
		}, false},
		{"stop", func(j *Job) { j.Stop = true }, true},
		{"priority", func(j *Job) { j.Priority++ }, true},
		{"job meta", func(j *Job) { j.Meta = map[string]string{"a": "b"} }, true},
		{"count", func(j *Job) { j.TaskGroups[0].Count = 2 }, true},
		{"config", func(j *Job) { j.TaskGroups[0].Tasks[0].Config["args"] = []any{"x"} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := specJob()
			new := old.Copy()
			tc.edit(new)
			if got := old.SpecChanged(new); got != tc.want {
				t.Fatalf("SpecChanged = %v, want %v", got, tc.want)
			}
		})
	}
	if !(*Job)(nil).SpecChanged(specJob()) || (*Job)(nil).SpecChanged(nil) {
		t.Fatal("nil jobs")
	}
}

func TestCombinedTaskMeta(t *testing.T) {
	j := specJob()
	j.Meta = map[string]string{"a": "job", "b": "job", "c": "job"}
	j.TaskGroups[0].Meta = map[string]string{"b": "group", "c": "group"}
	j.TaskGroups[0].Tasks[0].Meta = map[string]string{"c": "task"}
	want := map[string]string{"a": "job", "b": "group", "c": "task"}
	if got := j.CombinedTaskMeta("g", "t"); !maps.Equal(got, want) {
		t.Fatalf("CombinedTaskMeta = %v, want %v", got, want)
	}
	if got := j.CombinedTaskMeta("nope", "t"); !maps.Equal(got, j.Meta) {
		t.Fatalf("missing group: %v", got)
	}
	got := j.CombinedTaskMeta("g", "t")
	got["a"] = "changed"
	if j.Meta["a"] != "job" {
		t.Fatal("CombinedTaskMeta returned the job's own map")
	}
}

// TestCanonicalizeDefaultIdentityName: an identity block without a name is
// the default identity, named "default" on registration as Nomad's server
// names it; a task without the block keeps none.
func TestCanonicalizeDefaultIdentityName(t *testing.T) {
	j := specJob()
	j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &Task{Name: "u", Driver: "raw_exec"})
	j.TaskGroups[0].Tasks[0].Identity = &WorkloadIdentity{Env: true}
	j.Canonicalize()
	if got := j.TaskGroups[0].Tasks[0].Identity; *got != (WorkloadIdentity{Name: WorkloadIdentityDefaultName, Env: true}) {
		t.Fatalf("identity = %+v", got)
	}
	if got := j.TaskGroups[0].Tasks[1].Identity; got != nil {
		t.Fatalf("task without an identity block: %+v", got)
	}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
}
