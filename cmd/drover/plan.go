package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/structs"
)

// Exit codes of job plan, as Nomad's.
const (
	planNoChange = 0
	planChanges  = 1
	planError    = 255
)

func runJobPlan(e *env, args []string) int {
	var af apiFlags
	var jf jobFileFlags
	var verbose bool
	fs := newFlagSet(e, "job plan", "[options] <file>",
		"Dry run: show what submitting the job file would place, stop and update. Nothing is changed.\n\n"+
			"Exit codes: 0 no allocations would be created or destroyed, 1 some would, 255 error.")
	af.register(fs, e)
	jf.register(fs)
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		if code != 0 {
			return planError
		}
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return planError
	}
	path := fs.Arg(0)
	job, _, ok := jf.parse(e, path)
	if !ok {
		return planError
	}
	resp, _, err := af.client().PlanJob(context.Background(), job, true, nil)
	if err != nil {
		errorf(e, "during plan: %v", err)
		return planError
	}
	out := e.stdout

	changes := false
	if resp.Annotations != nil {
		for _, u := range resp.Annotations.DesiredTGUpdates {
			if u != nil && (u.Place > 0 || u.Stop > 0 || u.DestructiveUpdate > 0 || u.Migrate > 0 || u.Canary > 0) {
				changes = true
			}
		}
	}
	if resp.Diff != nil {
		fmt.Fprintln(out, strings.TrimSpace(formatJobDiff(resp.Diff, verbose)))
	} else {
		writeGroupPlans(out, job, resp.Annotations)
	}

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Scheduler dry-run:")
	if len(resp.FailedTGAllocs) == 0 {
		fmt.Fprintln(out, "- All tasks successfully allocated.")
	} else {
		fmt.Fprintln(out, "- WARNING: Failed to place all allocations.")
		writeFailedPlacements(out, resp.FailedTGAllocs, "  ")
	}
	if resp.Annotations != nil && len(resp.Annotations.PreemptedAllocs) > 0 {
		writePreemptions(out, resp.Annotations.PreemptedAllocs)
	}
	if next := resp.NextPeriodicLaunch; !next.IsZero() {
		now := e.now()
		fmt.Fprintf(out, "- If submitted now, next periodic launch would be at %s (%s from now).\n",
			e.formatTime(next), next.Truncate(time.Second).Sub(now.Truncate(time.Second)))
	}
	if resp.Warnings != "" {
		fmt.Fprintf(out, "\nJob Warnings:\n%s\n", resp.Warnings)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Job Modify Index: %d\n", resp.JobModifyIndex)
	fmt.Fprintln(out, "To submit the job with version verification run:")
	fmt.Fprintln(out)
	fmt.Fprintf(out, "drover job run -check-index %d %s\n", resp.JobModifyIndex, path)
	fmt.Fprintln(out)
	fmt.Fprintln(out, "When running the job with the check-index flag, the job is registered only if")
	fmt.Fprintln(out, "its modify index on the servers still matches; if another change came first,")
	fmt.Fprintln(out, "this plan may no longer hold and the run is refused.")
	if changes {
		return planChanges
	}
	return planNoChange
}

// writeGroupPlans prints one line per group from the plan's annotations,
// for a server that sent no diff.
func writeGroupPlans(out io.Writer, job *structs.Job, ann *structs.PlanAnnotations) {
	fmt.Fprintf(out, "Job: %q\n", job.ID)
	var groups []string
	for _, tg := range job.TaskGroups {
		groups = append(groups, tg.Name)
	}
	if ann != nil {
		for name := range ann.DesiredTGUpdates {
			if job.LookupTaskGroup(name) == nil {
				groups = append(groups, name) // a group the new version removes
			}
		}
	}
	for _, name := range groups {
		var u *structs.DesiredUpdates
		if ann != nil {
			u = ann.DesiredTGUpdates[name]
		}
		marker, counts := groupPlan(u)
		line := fmt.Sprintf("%sTask Group: %q", marker, name)
		if counts != "" {
			line += " (" + counts + ")"
		}
		fmt.Fprintln(out, line)
	}
}

// groupPlan returns the sign (as diffMarker) and the counts ("3 create,
// 1 destroy") of what the plan does to one group.
func groupPlan(u *structs.DesiredUpdates) (string, string) {
	if u == nil {
		return "", ""
	}
	var parts []string
	add := func(n uint64, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(u.Place, "create")
	add(u.Stop, "destroy")
	add(u.Migrate, "migrate")
	add(u.InPlaceUpdate, "in-place update")
	add(u.DestructiveUpdate, "create/destroy update")
	add(u.Canary, "canary")
	add(u.Ignore, "ignore")
	marker := ""
	switch {
	case u.Place > 0 && u.Stop == 0 && u.DestructiveUpdate == 0 && u.InPlaceUpdate == 0:
		marker = "+ "
	case u.Stop > 0 && u.Place == 0 && u.DestructiveUpdate == 0 && u.InPlaceUpdate == 0:
		marker = "- "
	case u.Place > 0 || u.Stop > 0 || u.DestructiveUpdate > 0 || u.InPlaceUpdate > 0 || u.Migrate > 0:
		marker = "+/- "
	}
	return marker, strings.Join(parts, ", ")
}

// preemptionListLimit: up to this many preempted allocations are listed
// one by one; more are summed up per job (as Nomad's plan does).
const preemptionListLimit = 10

// writePreemptions lists the allocations the plan would evict.
func writePreemptions(out io.Writer, allocs []*structs.AllocListStub) {
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Preemptions:")
	fmt.Fprintln(out)
	t := newTable(out)
	if len(allocs) < preemptionListLimit {
		t.row("Alloc ID", "Job ID", "Task Group")
		for _, a := range allocs {
			t.row(a.ID, a.JobID, a.TaskGroup)
		}
		t.flush()
		return
	}
	type key struct{ ns, job, typ string }
	counts := map[key]int{}
	var order []key
	for _, a := range allocs {
		k := key{a.Namespace, a.JobID, a.JobType}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	t.row("Job ID", "Namespace", "Job Type", "Preemptions")
	for _, k := range order {
		t.row(k.job, k.ns, k.typ, strconv.Itoa(counts[k]))
	}
	t.flush()
}
