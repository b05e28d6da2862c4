package agent

import (
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"
)

// TestNomadPeriodicJob drives a periodic job with Nomad's Go client, as
// Nomad's CLI does (no Canonicalize): registering it creates no
// evaluation, it reads back with Nomad's defaults, `PeriodicForce`
// launches a child `<id>/periodic-<unix>` that is scheduled, the parent's
// summary counts its children, and a stopped job cannot be forced.
func TestNomadPeriodicJob(t *testing.T) {
	a, c := startServerAgent(t)
	registerNode(t, a, "n1")

	job := baseProbeJob("nightly")
	job.Type = new("batch")
	job.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	job.Periodic = &nomad.PeriodicConfig{Spec: new("@yearly"), ProhibitOverlap: new(true)}
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID != "" {
		t.Fatalf("registering a periodic job created evaluation %q", resp.EvalID)
	}
	got, _, err := c.Jobs().Info("nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Periodic
	if p == nil || !*p.Enabled || *p.Spec != "@yearly" || *p.SpecType != "cron" || !*p.ProhibitOverlap || *p.TimeZone != "UTC" {
		t.Fatalf("periodic read back as %+v", p)
	}
	if *got.Status != "running" {
		t.Fatalf("status %q, want running (a periodic job runs while it can launch)", *got.Status)
	}

	plan, _, err := c.Jobs().Plan(job, false, nil)
	if err != nil || plan.NextPeriodicLaunch.IsZero() || plan.NextPeriodicLaunch.UTC().Month() != time.January || plan.NextPeriodicLaunch.UTC().Day() != 1 {
		t.Fatalf("plan of a periodic job: next launch %v, %v", plan.NextPeriodicLaunch, err)
	}

	evalID, _, err := c.Jobs().PeriodicForce("nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev := waitEval(t, c, evalID); ev.Status != "complete" || ev.TriggeredBy != "periodic-job" {
		t.Fatalf("forced launch's evaluation %+v", ev)
	}
	children, _, err := c.Jobs().PrefixList("nightly/periodic-")
	if err != nil || len(children) != 1 {
		t.Fatalf("children %v, %v", children, err)
	}
	child := children[0]
	if child.ParentID != "nightly" || child.Periodic || !strings.HasPrefix(child.ID, "nightly/periodic-") {
		t.Fatalf("child %+v", child)
	}
	// The child's ID holds a '/': Nomad's client escapes it.
	allocs, _, err := c.Jobs().Allocations(child.ID, false, nil)
	if err != nil || len(allocs) != 1 {
		t.Fatalf("child allocations %v, %v", allocs, err)
	}
	sum, _, err := c.Jobs().Summary("nightly", nil)
	if err != nil || sum.Children == nil || sum.Children.Pending+sum.Children.Running+sum.Children.Dead != 1 {
		t.Fatalf("parent summary %+v, %v", sum, err)
	}
	stubs, _, err := c.Jobs().PrefixList("nightly")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stubs {
		if s.ID == "nightly" && !s.Periodic {
			t.Fatalf("parent stub %+v: Periodic false", s)
		}
	}

	// Stopping the parent creates no evaluation; a stopped job cannot be
	// forced; forcing a job that is not periodic fails.
	dereg, _, err := c.Jobs().Deregister("nightly", false, nil)
	if err != nil || dereg != "" {
		t.Fatalf("deregister: eval %q, %v", dereg, err)
	}
	if _, _, err := c.Jobs().PeriodicForce("nightly", nil); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("force of a stopped job: %v", err)
	}
	if _, _, err := c.Jobs().PeriodicForce(child.ID, nil); err == nil || !strings.Contains(err.Error(), "non-periodic") {
		t.Fatalf("force of a child: %v", err)
	}

	// Nomad's validation, through Nomad's client.
	bad := baseProbeJob("bad")
	bad.Periodic = &nomad.PeriodicConfig{Spec: new("61 * * * *"), TimeZone: new("Nowhere/Land")}
	_, _, err = c.Jobs().Register(bad, nil)
	for _, want := range []string{"Periodic.Spec: invalid cron spec", "Periodic.TimeZone: invalid time zone", `only be used with the "batch" or "sysbatch" scheduler`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad periodic job: %v; want %q", err, want)
		}
	}
}
