package client

import (
	"io"
	"testing"
	"time"

	"github.com/drover-project/drover/jobspec"
	"github.com/drover-project/drover/structs"
)

// TestRuntimeInterpolationEndToEnd parses a job file whose task refers to
// the node, the job and its meta, runs it with raw_exec on a real client,
// and reads what the process printed: every reference arrives filled in.
func TestRuntimeInterpolationEndToEnd(t *testing.T) {
	src := `
job "interp" {
  type = "batch"
  meta {
    owner = "team-a"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      env {
        CLASS = "class=${node.class}"
        INDEX = "index=${NOMAD_ALLOC_INDEX}"
      }
      config {
        command = "/bin/sh"
        args = ["-c", "echo ${node.unique.name} ${NOMAD_JOB_NAME} $NOMAD_META_owner ${NOMAD_META_owner} ${attr.kernel.name}; echo \"$CLASS $INDEX ${meta.rack} $NOMAD_META_OWNER\""]
      }
    }
  }
}`
	job, err := jobspec.Parse("interp.hcl", []byte(src), nil)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	job.Canonicalize()
	job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Millisecond, Mode: "fail"}

	f := newFakeCluster(t, time.Second)
	c := testClient(t, f, "")
	cleanupKill(t, c)
	waitFor(t, "registration", 5*time.Second, func() bool { return f.node(c.NodeID()) != nil })
	node := f.node(c.NodeID())
	a := &structs.Allocation{ID: structs.GenerateUUID(), Name: "interp.g[1]", Namespace: job.Namespace,
		NodeID: c.NodeID(), JobID: job.ID, TaskGroup: "g", Job: job,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
	f.upsertAlloc(a)
	waitFor(t, "runner", 5*time.Second, func() bool { return c.runner(a.ID) != nil })

	r, err := c.TaskLogs(a.ID, "t", "stdout", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	kernel := node.Attributes["kernel.name"]
	if kernel == "" {
		t.Fatal("the node has no kernel.name attribute")
	}
	want := "test-node interp team-a team-a " + kernel + "\n" + "class=linux-small index=1 r1 team-a\n"
	if string(out) != want {
		t.Fatalf("the task printed\n%q\nwant\n%q", out, want)
	}
}
