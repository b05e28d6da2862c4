package main

import (
	"strings"
	"testing"
)

// TestOperatorSchedulerConfig runs get-config and set-config (Nomad's
// flags, check-and-set on the read configuration) against a dev agent.
func TestOperatorSchedulerConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	addr := runDevAgent(t, "sched1")
	var out, errOut string
	var code int
	waitFor(t, "a leader", 20e9, func() bool {
		code, out, errOut = cli(addr, "operator", "scheduler", "get-config")
		return code == 0
	})
	for _, want := range []string{"Scheduler Algorithm           = binpack", "Preemption System Scheduler   = true",
		"Preemption Service Scheduler  = false", "Modify Index                  = 0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("get-config lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = cli(addr, "operator", "scheduler", "set-config", "-scheduler-algorithm=spread",
		"-preempt-service-scheduler=true", "-preempt-system-scheduler=false")
	if code != 0 || !strings.Contains(out, "Scheduler configuration updated!") {
		t.Fatalf("set-config: %d %s %s", code, out, errOut)
	}
	code, out, _ = cli(addr, "operator", "scheduler", "get-config")
	for _, want := range []string{"= spread", "Preemption System Scheduler   = false", "Preemption Service Scheduler  = true"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("get-config after set lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut = cli(addr, "operator", "scheduler", "set-config", "-check-index=1", "-preempt-batch-scheduler"); code == 0 ||
		!strings.Contains(errOut, "check-index 1 does not match") {
		t.Fatalf("stale check-index: %d %s", code, errOut)
	}
	if code, _, errOut = cli(addr, "operator", "scheduler", "set-config", "-pause-eval-broker=true"); code == 0 ||
		!strings.Contains(errOut, "Drover does not support pausing the evaluation broker") {
		t.Fatalf("pause-eval-broker: %d %s", code, errOut)
	}
	code, out, _ = cli(addr, "operator", "scheduler", "get-config", "-json")
	if code != 0 || !strings.Contains(out, `"SchedulerAlgorithm": "spread"`) {
		t.Fatalf("get-config -json: %s", out)
	}
}
