package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/jobspec"
	"github.com/drover-project/drover/structs"
)

// updateJobHCL is a service job whose raw_exec task appends
// "<pid> <arg> <GREETING>" to out and then sleeps as that same process.
func updateJobHCL(script, out, arg, greeting, killTimeout string) string {
	return fmt.Sprintf(`job "upd" {
  datacenters = ["dc1"]
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver       = "raw_exec"
      kill_timeout = %q
      config {
        command = "/bin/sh"
        args    = [%q, %q]
      }
      env {
        GREETING = %q
        OUT      = %q
      }
    }
  }
}
`, killTimeout, script, arg, greeting, out)
}

// started is one line the task wrote when it started.
type started struct {
	pid           int
	arg, greeting string
}

func readStarts(t *testing.T, path string) []started {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []started
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("task wrote %q", line)
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("task wrote %q", line)
		}
		out = append(out, started{pid: pid, arg: f[1], greeting: f[2]})
	}
	return out
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// TestJobUpdatesRollOut runs a job file the way `drover job run` does
// (parse the HCL, register over HTTP) against a dev agent whose client runs
// the task as a real process, then:
//   - runs the same file again: no new version, plan shows nothing to do,
//     the process keeps running;
//   - changes the task's args and env: the plan shows a destructive
//     update, and a new allocation starts a new process with the new
//     values while the old process is gone;
//   - changes only the kill timeout: the plan shows an in-place update,
//     the allocation (on the servers and on the client) moves to the new
//     version, the process keeps running, and stopping the job kills it
//     with the new timeout.
func TestJobUpdatesRollOut(t *testing.T) {
	a := startDevClientAgent(t)
	c := api.NewClient(a.HTTPURL())
	waitForLeader(t, c)
	ctx := context.Background()
	dir := t.TempDir()
	script, out := filepath.Join(dir, "task.sh"), filepath.Join(dir, "starts")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$$ $1 $GREETING\" >> \"$OUT\"\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	parse := func(arg, greeting, killTimeout string) *structs.Job {
		t.Helper()
		job, err := jobspec.Parse("upd.hcl", []byte(updateJobHCL(script, out, arg, greeting, killTimeout)), nil)
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	run := func(job *structs.Job) *structs.JobRegisterResponse {
		t.Helper()
		resp, _, err := c.RegisterJob(ctx, job, nil, nil)
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		pollUntil(t, "the registration's evaluation to complete", 20*time.Second, func() bool {
			ev, _, err := c.Eval(ctx, resp.EvalID, nil)
			return err == nil && ev.Status == structs.EvalStatusComplete
		})
		return resp
	}
	plan := func(job *structs.Job) structs.DesiredUpdates {
		t.Helper()
		resp, _, err := c.PlanJob(ctx, job, true, nil)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		du := resp.Annotations.DesiredTGUpdates["g"]
		if du == nil {
			t.Fatalf("plan has no annotations for g: %+v", resp.Annotations)
		}
		return *du
	}
	srv := a.Server()
	live := func() []*structs.Allocation {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "upd")
		if err != nil {
			t.Fatal(err)
		}
		var out []*structs.Allocation
		for _, al := range allocs {
			if !al.TerminalStatus() {
				out = append(out, al)
			}
		}
		return out
	}
	running := func(what string, n int) *structs.Allocation {
		t.Helper()
		var got *structs.Allocation
		pollUntil(t, what, 20*time.Second, func() bool {
			l := live()
			if len(l) != 1 || l[0].ClientStatus != structs.AllocClientStatusRunning || len(readStarts(t, out)) != n {
				return false
			}
			got = l[0]
			return true
		})
		return got
	}
	jobVersion := func() uint64 {
		t.Helper()
		job, _, err := c.Job(ctx, "upd", nil)
		if err != nil {
			t.Fatal(err)
		}
		return job.Version
	}

	v1 := parse("one", "hello", "2s")
	first := run(v1)
	alloc1 := running("the first allocation to run", 1)
	s1 := readStarts(t, out)[0]
	if s1.arg != "one" || s1.greeting != "hello" || !alive(s1.pid) {
		t.Fatalf("first start %+v (alive %v)", s1, alive(s1.pid))
	}

	// The same file again changes nothing.
	if du := plan(parse("one", "hello", "2s")); du != (structs.DesiredUpdates{Ignore: 1}) {
		t.Fatalf("plan of the unchanged file: %+v, want 1 ignored", du)
	}
	again := run(parse("one", "hello", "2s"))
	if again.JobModifyIndex != first.JobModifyIndex || jobVersion() != 0 {
		t.Fatalf("unchanged run: job modify index %d (was %d), version %d", again.JobModifyIndex, first.JobModifyIndex, jobVersion())
	}
	if l := live(); len(l) != 1 || l[0].ID != alloc1.ID || l[0].AllocModifyIndex != alloc1.AllocModifyIndex {
		t.Fatalf("unchanged run touched the allocation: %+v", l)
	}

	// New args and env: a new allocation, a new process, the old one gone.
	v2 := parse("two", "bye", "2s")
	if du := plan(v2); du != (structs.DesiredUpdates{DestructiveUpdate: 1}) {
		t.Fatalf("plan of new args and env: %+v, want 1 destructive update", du)
	}
	run(v2)
	alloc2 := running("the replacement to run", 2)
	s2 := readStarts(t, out)[1]
	if alloc2.ID == alloc1.ID || alloc2.PreviousAllocation != alloc1.ID || alloc2.Job.Version != 1 {
		t.Fatalf("replacement %s (previous %s, version %d), first %s", alloc2.ID, alloc2.PreviousAllocation, alloc2.Job.Version, alloc1.ID)
	}
	if s2.arg != "two" || s2.greeting != "bye" || !alive(s2.pid) {
		t.Fatalf("second start %+v (alive %v)", s2, alive(s2.pid))
	}
	pollUntil(t, "the first process to be gone", 10*time.Second, func() bool { return !alive(s1.pid) })
	old, err := srv.State().AllocByID(nil, alloc1.ID)
	if err != nil || old.DesiredStatus != structs.AllocDesiredStatusStop {
		t.Fatalf("first allocation %+v, %v", old, err)
	}

	// Only the kill timeout: in place, same allocation, same process.
	v3 := parse("two", "bye", "3s")
	if du := plan(v3); du != (structs.DesiredUpdates{InPlaceUpdate: 1}) {
		t.Fatalf("plan of a kill timeout change: %+v, want 1 in-place update", du)
	}
	run(v3)
	pollUntil(t, "the client to hold version 2", 10*time.Second, func() bool {
		for _, al := range a.Client().Allocs() {
			if al.ID == alloc2.ID && al.Job != nil && al.Job.Version == 2 {
				return true
			}
		}
		return false
	})
	l := live()
	if len(l) != 1 || l[0].ID != alloc2.ID || l[0].JobVersion != 2 || l[0].Job.Version != 2 {
		t.Fatalf("after the in-place update: %+v", l)
	}
	if starts := readStarts(t, out); len(starts) != 2 || !alive(s2.pid) {
		t.Fatalf("in-place update restarted the task: starts %+v, alive %v", starts, alive(s2.pid))
	}

	// The client applies the new kill timeout to the running task.
	if _, _, err := c.DeregisterJob(ctx, "upd", false, nil); err != nil {
		t.Fatal(err)
	}
	var killing *structs.TaskEvent
	pollUntil(t, "the task to be killed", 20*time.Second, func() bool {
		al, err := srv.State().AllocByID(nil, alloc2.ID)
		if err != nil || al.ClientStatus != structs.AllocClientStatusComplete {
			return false
		}
		for _, ev := range al.TaskStates.MustMap()["t"].Events {
			if ev.Type == structs.TaskKilling {
				killing = ev
			}
		}
		return true
	})
	if killing == nil || killing.KillTimeout != 3*time.Second {
		t.Fatalf("killing event %+v, want the in-place kill timeout 3s", killing)
	}
	pollUntil(t, "the second process to be gone", 10*time.Second, func() bool { return !alive(s2.pid) })
}

// TestBatchJobRunAgain: a batch job whose work is done is not run again by
// the same file, and is run again, as a whole, by a changed one.
func TestBatchJobRunAgain(t *testing.T) {
	a := startDevClientAgent(t)
	c := api.NewClient(a.HTTPURL())
	waitForLeader(t, c)
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "runs")
	job := func(arg string) *structs.Job {
		j := rawExecJob("once", structs.JobTypeBatch, `echo "$$ $0 x" >> "$OUT"`)
		j.TaskGroups[0].Tasks[0].Config["args"] = []any{"-c", `echo "$$ $0 x" >> "$OUT"`, arg}
		j.TaskGroups[0].Tasks[0].Env = map[string]string{"OUT": out}
		return j
	}
	run := func(j *structs.Job) *structs.JobRegisterResponse {
		t.Helper()
		resp, _, err := c.RegisterJob(ctx, j, nil, nil)
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		pollUntil(t, "the registration's evaluation to complete", 20*time.Second, func() bool {
			ev, _, err := c.Eval(ctx, resp.EvalID, nil)
			return err == nil && ev.Status == structs.EvalStatusComplete
		})
		return resp
	}
	done := func(n int) {
		t.Helper()
		pollUntil(t, fmt.Sprintf("%d complete allocations", n), 20*time.Second, func() bool {
			allocs, err := a.Server().State().AllocsByJob(nil, structs.DefaultNamespace, "once")
			if err != nil || len(allocs) != n {
				return false
			}
			for _, al := range allocs {
				if al.ClientStatus != structs.AllocClientStatusComplete {
					return false
				}
			}
			return len(readStarts(t, out)) == n
		})
	}

	first := run(job("one"))
	done(1)
	again := run(job("one"))
	done(1)
	if again.JobModifyIndex != first.JobModifyIndex {
		t.Fatalf("unchanged batch job: job modify index %d, was %d", again.JobModifyIndex, first.JobModifyIndex)
	}
	run(job("two"))
	done(2)
	if runs := readStarts(t, out); runs[0].arg != "one" || runs[1].arg != "two" {
		t.Fatalf("runs %+v", runs)
	}
}
