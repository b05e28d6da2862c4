package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

func evalCommands() []*command {
	return []*command{
		{name: "eval status", synopsis: "Show an evaluation and why placements failed", run: runEvalStatus},
		{name: "eval list", synopsis: "List evaluations", run: runEvalList},
	}
}

func evalTable(w io.Writer, evals []*structs.Evaluation, verbose bool) {
	t := newTable(w)
	t.row("ID", "Priority", "Triggered By", "Job ID", "Namespace", "Node ID", "Status", "Placement Failures")
	for _, ev := range evals {
		t.row(shortID(ev.ID, verbose), strconv.Itoa(ev.Priority), ev.TriggeredBy, ev.JobID, ev.Namespace,
			orNone(shortID(ev.NodeID, verbose)), ev.Status, strconv.FormatBool(len(ev.FailedTGAllocs) > 0))
	}
	t.flush()
}

func runEvalList(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	var job, status, pageToken string
	var perPage int
	fs := newFlagSet(e, "eval list", "[options]", "List evaluations, optionally of one job or in one status.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	fs.StringVar(&job, "job", "", "only this job's evaluations")
	fs.StringVar(&status, "status", "", "only evaluations in this status (pending, blocked, complete, failed, canceled)")
	fs.IntVar(&perPage, "per-page", 0, "at most this many evaluations (0: all)")
	fs.StringVar(&pageToken, "page-token", "", "where the page starts (printed by the previous page)")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	q := &api.QueryOptions{PerPage: perPage, NextToken: pageToken, Params: map[string]string{}}
	if job != "" {
		q.Params["job"] = job
	}
	if status != "" {
		q.Params["status"] = status
	}
	evals, qm, err := af.client().Evals(context.Background(), q)
	if err != nil {
		return errorf(e, "querying evaluations: %v", err)
	}
	if asJSON {
		return printJSON(e, evals)
	}
	if len(evals) == 0 {
		fmt.Fprintln(e.stdout, "No evals found")
		return exitOK
	}
	evalTable(e.stdout, evals, verbose)
	if qm.NextToken != "" {
		fmt.Fprintf(e.stdout, "\nResults have been paginated. To get the next page run:\n\ndrover eval list -page-token %s\n", qm.NextToken)
	}
	return exitOK
}

func runEvalStatus(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	fs := newFlagSet(e, "eval status", "[options] <eval>",
		"Show an evaluation (an ID or a unique prefix) and, if placements failed, why.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	c := af.client()
	ctx := context.Background()
	id := fs.Arg(0)
	if len(id) < 2 {
		return usagef(e, "an evaluation ID or prefix needs at least two characters")
	}
	stub, code, ok := resolve(e, "evaluation", id,
		func(prefix string) ([]*structs.Evaluation, error) {
			evals, _, err := c.Evals(ctx, &api.QueryOptions{Prefix: prefix, Namespace: "*"})
			return evals, err
		},
		func(ev *structs.Evaluation) string { return ev.ID },
		func(evals []*structs.Evaluation) { evalTable(e.stderr, evals, verbose) })
	if !ok {
		return code
	}
	ev, _, err := c.Eval(ctx, stub.ID, nil)
	if err != nil {
		return errorf(e, "querying evaluation: %v", err)
	}
	if asJSON {
		return printJSON(e, ev)
	}
	failures := len(ev.FailedTGAllocs) > 0
	pairs := []string{
		"ID", shortID(ev.ID, verbose),
		"Create Time", e.agoUnixNano(ev.CreateTime),
		"Modify Time", e.agoUnixNano(ev.ModifyTime),
		"Status", ev.Status,
		"Status Description", orNone(ev.StatusDescription),
		"Type", ev.Type,
		"TriggeredBy", ev.TriggeredBy,
	}
	if ev.JobID != "" {
		pairs = append(pairs, "Job ID", ev.JobID)
	}
	if ev.NodeID != "" {
		pairs = append(pairs, "Node ID", shortID(ev.NodeID, verbose))
	}
	pairs = append(pairs, "Namespace", ev.Namespace, "Priority", strconv.Itoa(ev.Priority),
		"Placement Failures", strconv.FormatBool(failures))
	if ev.PreviousEval != "" {
		pairs = append(pairs, "Previous Eval", shortID(ev.PreviousEval, verbose))
	}
	if ev.NextEval != "" {
		pairs = append(pairs, "Next Eval", shortID(ev.NextEval, verbose))
	}
	if ev.BlockedEval != "" {
		pairs = append(pairs, "Blocked Eval", shortID(ev.BlockedEval, verbose))
	}
	kv(e.stdout, pairs...)
	if failures {
		fmt.Fprintln(e.stdout)
		fmt.Fprintln(e.stdout, "==> Failed Placements")
		writeFailedPlacements(e.stdout, ev.FailedTGAllocs, "")
		if ev.BlockedEval != "" {
			fmt.Fprintf(e.stdout, "\nEvaluation %q waiting for additional capacity to place remainder\n",
				shortID(ev.BlockedEval, verbose))
		}
	}
	return exitOK
}
