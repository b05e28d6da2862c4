package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// preemptJobHCL is a raw_exec service job whose task writes its PID to
// dir/<alloc ID> and sleeps.
func preemptJobHCL(id string, priority, count int, memMB int64, dir string) string {
	return fmt.Sprintf(`job %q {
  datacenters = ["*"]
  priority    = %d
  group "g" {
    count = %d
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo $$ > %s/$NOMAD_ALLOC_ID; exec sleep 600"]
      }
      resources {
        cpu    = 20
        memory = %d
      }
    }
  }
}
`, id, priority, count, dir, memMB)
}

// TestPreemptionRealProcesses: on a dev agent with service preemption
// enabled (set-config), a priority-55 job that would fit only by evicting
// a priority-50 allocation evicts nothing (preemption needs a gap of ten
// levels) and waits, blocked; a priority-80 job that fits only by evicting one
// of two priority-50 allocations: job plan lists the preemption, the run
// evicts exactly one allocation (PreemptedByAllocation set), its process
// stops, the new one runs, and the evicted job's replacement waits,
// blocked, for room.
func TestPreemptionRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent and runs processes")
	}
	addr := startCLIAgent(t)
	c := api.NewClient(addr)
	ctx := context.Background()
	if code, out, errOut := cli(addr, "operator", "scheduler", "set-config", "-preempt-service-scheduler=true"); code != 0 {
		t.Fatalf("set-config: %s%s", out, errOut)
	}
	stubs, _, err := c.Nodes(ctx, nil)
	if err != nil || len(stubs) != 1 {
		t.Fatalf("nodes: %v %v", stubs, err)
	}
	node, _, err := c.Node(ctx, stubs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	usable := node.NodeResources.Memory.MemoryMB
	if node.ReservedResources != nil {
		usable -= node.ReservedResources.Memory.MemoryMB
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pids := t.TempDir()
	low := write("low.hcl", preemptJobHCL("low", 50, 2, usable*4/10, pids))
	mid := write("mid.hcl", preemptJobHCL("mid", 55, 1, usable/2, pids))
	high := write("high.hcl", preemptJobHCL("high", 80, 1, usable/2, pids))

	if code, out, errOut := cli(addr, "job", "run", "-detach", low); code != 0 {
		t.Fatalf("run low: %s%s", out, errOut)
	}
	running := func(job string, n int) func() bool {
		return func() bool {
			allocs, _, err := c.JobAllocations(ctx, job, false, nil)
			if err != nil {
				return false
			}
			k := 0
			for _, a := range allocs {
				if a.ClientStatus == structs.AllocClientStatusRunning && a.DesiredStatus == structs.AllocDesiredStatusRun {
					k++
				}
			}
			return k == n
		}
	}
	waitFor(t, "two low allocations running", 30*time.Second, running("low", 2))
	lowBefore, _, err := c.JobAllocations(ctx, "low", false, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Priority 55 against 50: no preemption, the job waits.
	code, out, errOut := cli(addr, "job", "plan", mid)
	if code != 1 || strings.Contains(out, "Preemptions:") {
		t.Fatalf("plan mid: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli(addr, "job", "run", "-detach", mid); code != 0 {
		t.Fatalf("run mid: %s%s", out, errOut)
	}
	waitFor(t, "the mid job blocked", 30*time.Second, func() bool {
		evals, _, err := c.JobEvaluations(ctx, "mid", nil)
		if err != nil {
			return false
		}
		for _, e := range evals {
			if e.Status == structs.EvalStatusBlocked {
				return true
			}
		}
		return false
	})
	lowAfter, _, err := c.JobAllocations(ctx, "low", false, nil)
	if err != nil || len(lowAfter) != len(lowBefore) || !running("low", 2)() {
		t.Fatalf("low after the priority-55 job: %d allocations (%d before), %v", len(lowAfter), len(lowBefore), err)
	}
	for _, a := range lowAfter {
		if a.DesiredStatus != structs.AllocDesiredStatusRun {
			t.Fatalf("the priority-55 job moved low allocation %s to %s", a.ID, a.DesiredStatus)
		}
	}
	if s, _, err := c.JobSummary(ctx, "mid", nil); err != nil || s.Summary["g"].Queued != 1 || s.Summary["g"].Running != 0 {
		t.Fatalf("mid summary: %+v %v", s, err)
	}
	if code, out, errOut := cli(addr, "job", "stop", "-purge", "mid"); code != 0 {
		t.Fatalf("stop mid: %s%s", out, errOut)
	}

	code, out, errOut = cli(addr, "job", "plan", high)
	if code != 1 || !strings.Contains(out, "Preemptions:") || strings.Count(out, "low  ") != 1 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli(addr, "job", "run", "-detach", high); code != 0 {
		t.Fatalf("run high: %s%s", out, errOut)
	}
	waitFor(t, "the high allocation running", 30*time.Second, running("high", 1))

	highAllocs, _, _ := c.JobAllocations(ctx, "high", false, nil)
	newAlloc, _, err := c.Allocation(ctx, highAllocs[0].ID, nil)
	if err != nil || len(newAlloc.PreemptedAllocations) != 1 {
		t.Fatalf("high allocation: %+v %v", newAlloc, err)
	}
	victim, _, err := c.Allocation(ctx, newAlloc.PreemptedAllocations[0], nil)
	if err != nil || victim.JobID != "low" || victim.DesiredStatus != structs.AllocDesiredStatusEvict || victim.PreemptedByAllocation != newAlloc.ID {
		t.Fatalf("victim: %+v %v", victim, err)
	}
	waitFor(t, "the evicted allocation to stop", 30*time.Second, func() bool {
		a, _, err := c.Allocation(ctx, victim.ID, nil)
		return err == nil && a.ClientStatus == structs.AllocClientStatusComplete
	})
	pid := readPID(t, filepath.Join(pids, victim.ID))
	waitFor(t, "the evicted process to exit", 10*time.Second, func() bool {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	})
	if p := readPID(t, filepath.Join(pids, newAlloc.ID)); syscall.Kill(p, 0) != nil {
		t.Fatalf("the preempting allocation's process %d is not running", p)
	}
	// The other low allocation still runs; the evicted one's replacement
	// is queued behind a blocked evaluation.
	if !running("low", 1)() {
		t.Fatal("the second low allocation no longer runs")
	}
	waitFor(t, "the low job's preemption evaluation to leave a blocked one", 30*time.Second, func() bool {
		evals, _, err := c.JobEvaluations(ctx, "low", nil)
		if err != nil {
			return false
		}
		preempted, blocked := false, false
		for _, e := range evals {
			preempted = preempted || (e.TriggeredBy == structs.EvalTriggerPreemption && e.Status == structs.EvalStatusComplete)
			blocked = blocked || e.Status == structs.EvalStatusBlocked
		}
		return preempted && blocked
	})
	if s, _, err := c.JobSummary(ctx, "low", nil); err != nil || s.Summary["g"].Queued != 1 {
		t.Fatalf("low summary: %+v %v", s, err)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var b []byte
	waitFor(t, "a pid file", 10*time.Second, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil && len(strings.TrimSpace(string(b))) > 0
	})
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
