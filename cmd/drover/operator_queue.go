package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/structs"
)

// queueBands and queueReasons are the order the summary prints the bands
// and reasons in (server/queue_metrics.go defines them).
var (
	queueBands   = []string{"low", "normal", "high"}
	queueReasons = []string{"capacity", "constraints"}
)

func runOperatorQueue(e *env, args []string) int {
	var af apiFlags
	var stale, asJSON bool
	fs := newFlagSet(e, "operator queue", "[options]",
		"Show the scheduling queue as the leader sees it: allocations placed and not started, allocations not "+
			"yet placed, blocked evaluations by reason, the longest wait overall and per priority band, and "+
			"placements. docs/metrics.md (\"Queue metrics\") defines each figure.")
	af.register(fs, e)
	fs.BoolVar(&stale, "stale", false, "let any server answer (a follower tracks no blocked evaluations)")
	fs.BoolVar(&asJSON, "json", false, "print JSON (as GET /v1/operator/queue returns it)")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	q, err := af.client().QueueStats(context.Background(), &api.QueryOptions{AllowStale: stale})
	if err != nil {
		return errorf(e, "retrieving the queue: %v", err)
	}
	if asJSON {
		return printJSON(e, q)
	}
	printQueue(e, q)
	return 0
}

// printQueue writes the summary, then the waiting allocations per job and
// per node class when there are any.
func printQueue(e *env, q *structs.QueueStatsResponse) {
	reasons := make([]string, 0, len(queueReasons))
	for _, r := range queueReasons {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, q.BlockedByReason[r]))
	}
	bands := make([]string, 0, len(queueBands))
	for _, b := range queueBands {
		bands = append(bands, b+" "+formatWait(q.LongestWaitSecondsByBand[b]))
	}
	kv(e.stdout,
		"Placed, not started", strconv.Itoa(q.Waiting),
		"Not yet placed", strconv.Itoa(q.Queued),
		"Blocked evaluations", fmt.Sprintf("%d (%s)", q.Blocked, strings.Join(reasons, ", ")),
		"Longest wait", fmt.Sprintf("%s (%s)", formatWait(q.LongestWaitSeconds), strings.Join(bands, ", ")),
		"Placements", strconv.FormatUint(q.Placements, 10))
	if len(q.WaitingByJob) > 0 {
		fmt.Fprintln(e.stdout, "\nPlaced, not started, by job")
		t := newTable(e.stdout)
		t.row("Namespace", "Job", "Count")
		for _, j := range q.WaitingByJob {
			t.row(j.Namespace, j.JobID, strconv.Itoa(j.Count))
		}
		t.flush()
	}
	printClassCounts(e, "Placed, not started, by node class", q.WaitingByClass)
	printClassCounts(e, "Blocked on capacity, by node class", q.BlockedCapacityByClass)
}

// printClassCounts writes a table of counts by node class, if any.
func printClassCounts(e *env, title string, counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	fmt.Fprintf(e.stdout, "\n%s\n", title)
	classes := make([]string, 0, len(counts))
	for c := range counts {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	t := newTable(e.stdout)
	t.row("Class", "Count")
	for _, c := range classes {
		t.row(orNone(c), strconv.Itoa(counts[c]))
	}
	t.flush()
}

// formatWait prints seconds as a duration rounded to the second.
func formatWait(seconds float64) string {
	return (time.Duration(seconds * float64(time.Second))).Round(time.Second).String()
}
