package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func runJobHistory(e *env, args []string) int {
	var af apiFlags
	var diffs, full, asJSON bool
	var version string
	fs := newFlagSet(e, "job history", "[options] <job>",
		"Show the versions of a job the servers keep (the last 6 by default), newest first.")
	af.register(fs, e)
	fs.BoolVar(&diffs, "p", false, "show each version's changes from the version before it")
	fs.BoolVar(&full, "full", false, "show each version's whole job as JSON")
	fs.BoolVar(&asJSON, "json", false, "print the versions as JSON")
	fs.StringVar(&version, "version", "", "show only this version")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	if asJSON && (diffs || full) {
		return usagef(e, "-json is exclusive with -p and -full")
	}
	var want uint64
	if version != "" {
		v, err := strconv.ParseUint(version, 10, 64)
		if err != nil {
			return usagef(e, "Error parsing version value %q: %v", version, err)
		}
		want = v
	}
	c := af.client()
	stub, code, ok := resolveJob(e, c, fs.Arg(0))
	if !ok {
		return code
	}
	resp, _, err := c.JobVersions(context.Background(), stub.ID, diffs, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "retrieving job versions: %v", err)
	}
	versions := resp.Versions
	if len(resp.Diffs) != 0 && len(versions) != len(resp.Diffs)+1 {
		return errorf(e, "%d job versions do not match %d diffs", len(versions), len(resp.Diffs))
	}
	diffOf := func(i int) *structs.JobDiff {
		if i < len(resp.Diffs) {
			return resp.Diffs[i]
		}
		return nil
	}
	if version != "" {
		for i, v := range versions {
			if v.Version == want {
				if asJSON {
					return printJSON(e, v)
				}
				return writeJobVersion(e, v, diffOf(i), full)
			}
		}
		return errorf(e, "job %q has no version %d", stub.ID, want)
	}
	if asJSON {
		return printJSON(e, versions)
	}
	for i, v := range versions {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		if code := writeJobVersion(e, v, diffOf(i), full); code != exitOK {
			return code
		}
	}
	return exitOK
}

// writeJobVersion prints one version as Nomad's job history does:
// "Name = value" lines, the diff (if any) below "Diff =".
func writeJobVersion(e *env, job *structs.Job, d *structs.JobDiff, full bool) int {
	rows := [][2]string{
		{"Version", strconv.FormatUint(job.Version, 10)},
		{"Stable", strconv.FormatBool(job.Stable)},
		{"Submit Date", e.formatUnixNano(job.SubmitTime)},
	}
	if d != nil {
		rows = append(rows, [2]string{"Diff", "\n" + strings.TrimSpace(formatJobDiff(d, false))})
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(e.stdout, "%-*s = %s\n", width, r[0], r[1])
	}
	if full {
		fmt.Fprintf(e.stdout, "%-*s = JSON Job:\n", width, "Full")
		return printJSON(e, job)
	}
	return exitOK
}

func runJobRevert(e *env, args []string) int {
	var af apiFlags
	var detach, verbose bool
	fs := newFlagSet(e, "job revert", "[options] <job> <version>",
		"Register a kept version of a job again, as its newest version. Monitors the evaluation unless -detach.")
	af.register(fs, e)
	fs.BoolVar(&detach, "detach", false, "return once the revert is registered, without monitoring")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 2); !ok {
		return code
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return exitError
	}
	version, err := strconv.ParseUint(fs.Arg(1), 10, 64)
	if err != nil {
		return usagef(e, "The job version to revert to must be a number: %v", err)
	}
	c := af.client()
	stub, code, ok := resolveJob(e, c, fs.Arg(0))
	if !ok {
		return code
	}
	ctx := context.Background()
	resp, _, err := c.RevertJob(ctx, stub.ID, version, nil, &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "reverting job: %v", err)
	}
	if detach || resp.EvalID == "" {
		fmt.Fprintf(e.stdout, "Evaluation ID: %s\n", resp.EvalID)
		return exitOK
	}
	return (&evalMonitor{e: e, c: c, verbose: verbose}).monitor(ctx, resp.EvalID)
}

func runJobScale(e *env, args []string) int {
	var af apiFlags
	var detach, verbose bool
	fs := newFlagSet(e, "job scale", "[options] <job> [<group>] <count>",
		"Set the count of a job's group (the group may be left out when the job has one). Monitors the evaluation unless -detach.")
	af.register(fs, e)
	fs.BoolVar(&detach, "detach", false, "return once the scaling is registered, without monitoring")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 3); !ok {
		return code
	}
	if fs.NArg() < 2 || fs.NArg() > 3 {
		return usagef(e, "Command requires at least two arguments and no more than three")
	}
	group, countArg := "", fs.Arg(1)
	if fs.NArg() == 3 {
		group, countArg = fs.Arg(1), fs.Arg(2)
	}
	count, err := strconv.ParseInt(countArg, 10, 64)
	if err != nil {
		return usagef(e, "Failed to convert count string to int: %v", err)
	}
	c := af.client()
	stub, code, ok := resolveJob(e, c, fs.Arg(0))
	if !ok {
		return code
	}
	ctx := context.Background()
	st, _, err := c.JobScaleStatus(ctx, stub.ID, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "querying job: %v", err)
	}
	switch _, found := st.TaskGroups[group]; {
	case group == "" && len(st.TaskGroups) == 1:
		for name := range st.TaskGroups {
			group = name
		}
	case group == "":
		return errorf(e, "Group name required")
	case !found:
		return errorf(e, "Group %s not found within job", group)
	}
	resp, _, err := c.ScaleJob(ctx, stub.ID, group, count, "submitted using the Drover CLI", &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "submitting scaling request: %v", err)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(e.stdout, "Job Warnings:\n%s\n\n", resp.Warnings)
	}
	if detach || resp.EvalID == "" {
		fmt.Fprintf(e.stdout, "Evaluation ID: %s\n", resp.EvalID)
		return exitOK
	}
	return (&evalMonitor{e: e, c: c, verbose: verbose}).monitor(ctx, resp.EvalID)
}
