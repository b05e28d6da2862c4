package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// Deployment commands, as Nomad's: list, status, promote, fail, pause,
// resume. A deployment is named by its ID or a unique prefix.

func deploymentCommands() []*command {
	return []*command{
		{name: "deployment list", synopsis: "List deployments", run: runDeploymentList},
		{name: "deployment status", synopsis: "Show a deployment's progress", run: runDeploymentStatus},
		{name: "deployment promote", synopsis: "Promote a deployment's canaries", run: runDeploymentPromote},
		{name: "deployment fail", synopsis: "Fail a running deployment", run: runDeploymentFail},
		{name: "deployment pause", synopsis: "Pause a running deployment", run: runDeploymentPause(true)},
		{name: "deployment resume", synopsis: "Resume a paused deployment", run: runDeploymentPause(false)},
	}
}

func deploymentTable(w io.Writer, list []*structs.Deployment, verbose bool) {
	t := newTable(w)
	t.row("ID", "Job ID", "Job Version", "Status", "Description")
	for _, d := range list {
		t.row(shortID(d.ID, verbose), d.JobID, strconv.FormatUint(d.JobVersion, 10), d.Status, d.StatusDescription)
	}
	t.flush()
}

func runDeploymentList(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	fs := newFlagSet(e, "deployment list", "[options]", "List the namespace's deployments, newest first.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	list, _, err := af.client().Deployments(context.Background(), "", nil)
	if err != nil {
		return errorf(e, "querying deployments: %v", err)
	}
	if asJSON {
		return printJSON(e, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "No deployments found")
		return exitOK
	}
	deploymentTable(e.stdout, list, verbose)
	return exitOK
}

// deploymentArg parses flags and one deployment argument, and resolves it.
func deploymentArg(e *env, fs *flag.FlagSet, af *apiFlags, args []string, verbose *bool) (*api.Client, *structs.Deployment, int, bool) {
	if code, ok := parseFlags(fs, args, 1); !ok {
		return nil, nil, code, false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, nil, exitError, false
	}
	c := af.client()
	ctx := context.Background()
	d, code, ok := resolve(e, "deployment", fs.Arg(0),
		func(prefix string) ([]*structs.Deployment, error) {
			list, _, err := c.Deployments(ctx, prefix, nil)
			return list, err
		},
		func(d *structs.Deployment) string { return d.ID },
		func(list []*structs.Deployment) { deploymentTable(e.stderr, list, *verbose) })
	return c, d, code, ok
}

func runDeploymentStatus(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	fs := newFlagSet(e, "deployment status", "[options] <deployment>", "Show a deployment and each group's progress.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	_, d, code, ok := deploymentArg(e, fs, &af, args, &verbose)
	if !ok {
		return code
	}
	if asJSON {
		return printJSON(e, d)
	}
	writeDeployment(e, e.stdout, d, verbose)
	return exitOK
}

// writeDeployment prints a deployment as Nomad's CLI does: its fields,
// then one row per group.
func writeDeployment(e *env, w io.Writer, d *structs.Deployment, verbose bool) {
	kv(w, "ID", shortID(d.ID, verbose), "Job ID", d.JobID, "Job Version", strconv.FormatUint(d.JobVersion, 10),
		"Status", d.Status, "Description", d.StatusDescription)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Deployed")
	canaries, autoRevert, autoPromote := false, false, false
	for _, g := range d.TaskGroups {
		canaries = canaries || g.DesiredCanaries > 0
		autoRevert = autoRevert || g.AutoRevert
		autoPromote = autoPromote || g.AutoPromote
	}
	head := []string{"Task Group"}
	if autoRevert {
		head = append(head, "Auto Revert")
	}
	if canaries {
		head = append(head, "Promoted")
		if autoPromote {
			head = append(head, "Auto Promote")
		}
	}
	head = append(head, "Desired")
	if canaries {
		head = append(head, "Canaries")
	}
	head = append(head, "Placed", "Healthy", "Unhealthy", "Progress Deadline")
	t := newTable(w)
	t.row(head...)
	names := make([]string, 0, len(d.TaskGroups))
	for name := range d.TaskGroups {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		g := d.TaskGroups[name]
		row := []string{name}
		if autoRevert {
			row = append(row, strconv.FormatBool(g.AutoRevert))
		}
		if canaries {
			row = append(row, strconv.FormatBool(g.Promoted))
			if autoPromote {
				row = append(row, strconv.FormatBool(g.AutoPromote))
			}
		}
		row = append(row, strconv.Itoa(g.DesiredTotal))
		if canaries {
			row = append(row, strconv.Itoa(g.DesiredCanaries))
		}
		deadline := "N/A"
		if !g.RequireProgressBy.IsZero() {
			deadline = e.formatTime(g.RequireProgressBy)
		}
		row = append(row, strconv.Itoa(g.PlacedAllocs), strconv.Itoa(g.HealthyAllocs), strconv.Itoa(g.UnhealthyAllocs), deadline)
		t.row(row...)
	}
	t.flush()
}

func runDeploymentPromote(e *env, args []string) int {
	var af apiFlags
	var verbose bool
	var groups stringList
	fs := newFlagSet(e, "deployment promote", "[options] <deployment>",
		"Promote the canaries of a deployment: of every group, or of the groups given with -group.")
	af.register(fs, e)
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	fs.Var(&groups, "group", "a group to promote (repeatable; default: all)")
	c, d, code, ok := deploymentArg(e, fs, &af, args, &verbose)
	if !ok {
		return code
	}
	resp, _, err := c.PromoteDeployment(context.Background(), d.ID, groups, nil)
	if err != nil {
		return errorf(e, "promoting deployment: %v", err)
	}
	return deploymentChanged(e, c, resp, verbose)
}

func runDeploymentFail(e *env, args []string) int {
	var af apiFlags
	var verbose bool
	fs := newFlagSet(e, "deployment fail", "[options] <deployment>",
		"Fail a running deployment; with auto_revert, its job goes back to the last stable version.")
	af.register(fs, e)
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	c, d, code, ok := deploymentArg(e, fs, &af, args, &verbose)
	if !ok {
		return code
	}
	resp, _, err := c.FailDeployment(context.Background(), d.ID, nil)
	if err != nil {
		return errorf(e, "failing deployment: %v", err)
	}
	msg := fmt.Sprintf("Deployment %q failed", shortID(d.ID, verbose))
	if resp.RevertedJobVersion != nil {
		msg += fmt.Sprintf(". Reverted job to version %d", *resp.RevertedJobVersion)
	}
	fmt.Fprintln(e.stdout, msg)
	return deploymentChanged(e, c, resp, verbose)
}

func runDeploymentPause(pause bool) func(e *env, args []string) int {
	verb, done := "resume", "resumed"
	if pause {
		verb, done = "pause", "paused"
	}
	return func(e *env, args []string) int {
		var af apiFlags
		var verbose bool
		fs := newFlagSet(e, "deployment "+verb, "[options] <deployment>", strings.ToUpper(verb[:1])+verb[1:]+" a deployment.")
		af.register(fs, e)
		fs.BoolVar(&verbose, "verbose", false, "show full IDs")
		c, d, code, ok := deploymentArg(e, fs, &af, args, &verbose)
		if !ok {
			return code
		}
		resp, _, err := c.PauseDeployment(context.Background(), d.ID, pause, nil)
		if err != nil {
			return errorf(e, "%s deployment: %v", verb, err)
		}
		fmt.Fprintf(e.stdout, "Deployment %q %s\n", shortID(d.ID, verbose), done)
		return deploymentChanged(e, c, resp, verbose)
	}
}

// deploymentChanged follows the evaluation a change created, if any.
func deploymentChanged(e *env, c *api.Client, resp *structs.DeploymentUpdateResponse, verbose bool) int {
	if resp.EvalID == "" {
		return exitOK
	}
	return (&evalMonitor{e: e, c: c, verbose: verbose}).monitor(context.Background(), resp.EvalID)
}

// followDeployment follows the deployment of the job version registered
// at jobModifyIndex to its end, printing each change of its status or
// counts, then the deployment; 0 when it succeeded, 1 otherwise.
func followDeployment(ctx context.Context, e *env, c *api.Client, jobID string, jobModifyIndex uint64, verbose bool) int {
	var index uint64
	var last, id string
	for {
		list, qm, err := c.JobDeployments(ctx, jobID, false, &api.QueryOptions{WaitIndex: index, WaitTime: e.monitorWait})
		if err != nil {
			return errorf(e, "reading the job's deployments: %v", err)
		}
		index = qm.LastIndex
		var d *structs.Deployment
		for _, x := range list {
			if x.JobSpecModifyIndex == jobModifyIndex {
				d = x
			}
		}
		if d == nil {
			continue
		}
		if id == "" {
			id = d.ID
			fmt.Fprintf(e.stdout, "\n==> Monitoring deployment %q\n", shortID(d.ID, verbose))
		}
		if now := deploymentLine(d); now != last {
			fmt.Fprintf(e.stdout, "    %s\n", now)
			last = now
		}
		if d.Active() {
			continue
		}
		fmt.Fprintln(e.stdout)
		writeDeployment(e, e.stdout, d, verbose)
		if d.Status == structs.DeploymentStatusSuccessful {
			return exitOK
		}
		return exitError
	}
}

// deploymentLine is one line of a deployment's progress.
func deploymentLine(d *structs.Deployment) string {
	var desired, placed, healthy, unhealthy int
	for _, g := range d.TaskGroups {
		desired += g.DesiredTotal
		placed += g.PlacedAllocs
		healthy += g.HealthyAllocs
		unhealthy += g.UnhealthyAllocs
	}
	return fmt.Sprintf("%s: %s (desired %d, placed %d, healthy %d, unhealthy %d)",
		d.Status, d.StatusDescription, desired, placed, healthy, unhealthy)
}
