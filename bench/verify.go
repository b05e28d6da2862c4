package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/backoff"
)

// At the end of a run every job's allocations are read back
// (/v1/job/<id>/allocations, from the leader) and checked:
//   - duplicates: no allocation name ("job.group[7]") may be held by two
//     non-terminal allocations (desired run, client status neither
//     complete, failed nor lost) at once: that is one slot placed twice;
//   - convergence (place scenarios): each job's allocations that hold a
//     slot (non-terminal, or complete: a batch task that finished) are
//     exactly Count, one per name "<job>.<group>[i]" with i < Count.
const (
	verifyWorkers = 16
	// maxProblems bounds the problems the result lists.
	maxProblems = 10
)

// VerifyResult is what reading every job's allocations at the end showed.
type VerifyResult struct {
	// Jobs is how many jobs were read.
	Jobs int `json:"jobs"`
	// Expected is how many jobs must have converged (place scenarios);
	// 0 when convergence is not checked (churn: jobs change until the
	// end).
	Expected  int `json:"expected"`
	Converged int `json:"converged"`
	// Duplicates counts allocation names held by more than one
	// non-terminal allocation.
	Duplicates int `json:"duplicates"`
	// ReadErrors counts jobs whose allocations could not be read.
	ReadErrors int      `json:"read_errors"`
	Problems   []string `json:"problems,omitempty"`
	Seconds    float64  `json:"seconds"`
}

// failed reports whether the check found a duplicate, a job that did
// not converge, or could not read a job.
func (v *VerifyResult) failed() bool {
	return v != nil && (v.Duplicates > 0 || v.ReadErrors > 0 || v.Converged < v.Expected)
}

// summary renders the outcome in one line.
func (v *VerifyResult) summary() string {
	if v == nil {
		return "not checked"
	}
	conv := "convergence not checked"
	if v.Expected > 0 {
		conv = fmt.Sprintf("%s/%s jobs converged", fmtCount(float64(v.Converged)), fmtCount(float64(v.Expected)))
	}
	out := fmt.Sprintf("%s, %d duplicate allocations in %s jobs read", conv, v.Duplicates, fmtCount(float64(v.Jobs)))
	if v.ReadErrors > 0 {
		out += fmt.Sprintf(", %d unreadable", v.ReadErrors)
	}
	return out
}

func (v *VerifyResult) problem(format string, args ...any) {
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// jobCheck is what one job's allocations showed.
type jobCheck struct {
	// Live counts non-terminal allocations; Holding adds the complete
	// ones (desired run).
	Live, Holding int
	// Duplicates are the names held by more than one non-terminal
	// allocation, each with those allocations' IDs.
	Duplicates map[string][]string
	// Converged: want >= 0 and the holding allocations are exactly one
	// per name <job>.<group>[i], i < want (every group has want).
	Converged bool
	// Problem says why the job did not converge ("" if it did).
	Problem string
}

// liveAlloc reports whether an allocation is non-terminal (Nomad's
// TerminalStatus, negated).
func liveAlloc(a *nomad.AllocationListStub) bool {
	switch a.DesiredStatus {
	case "stop", "evict":
		return false
	}
	switch a.ClientStatus {
	case "complete", "failed", "lost":
		return false
	}
	return true
}

// holdsSlot reports whether an allocation fills its slot: non-terminal,
// or a batch task that completed (not replaced, so still its slot's).
func holdsSlot(a *nomad.AllocationListStub) bool {
	return liveAlloc(a) || (a.ClientStatus == "complete" && a.DesiredStatus == "run")
}

// checkJob checks one job's allocations; want < 0 skips convergence.
func checkJob(jobID string, want int, allocs []*nomad.AllocationListStub) jobCheck {
	var c jobCheck
	live := map[string][]string{}
	holders := map[string]int{}
	groups := map[string]bool{}
	outOfRange := ""
	for _, a := range allocs {
		if a.JobID != "" && a.JobID != jobID {
			continue
		}
		if liveAlloc(a) {
			c.Live++
			live[a.Name] = append(live[a.Name], a.ID)
		}
		if !holdsSlot(a) {
			continue
		}
		c.Holding++
		holders[a.Name]++
		groups[a.TaskGroup] = true
		if i, ok := slotIndex(jobID, a.TaskGroup, a.Name); want >= 0 && (!ok || i >= want) && outOfRange == "" {
			outOfRange = a.Name
		}
	}
	for name, ids := range live {
		if len(ids) > 1 {
			if c.Duplicates == nil {
				c.Duplicates = map[string][]string{}
			}
			sort.Strings(ids)
			c.Duplicates[name] = ids
		}
	}
	if want < 0 {
		return c
	}
	slots := want * max(len(groups), 1)
	switch {
	case len(c.Duplicates) > 0:
		c.Problem = fmt.Sprintf("%d names held by more than one allocation", len(c.Duplicates))
	case outOfRange != "":
		c.Problem = fmt.Sprintf("allocation %s is outside the count of %d", outOfRange, want)
	case c.Holding != slots || len(holders) != slots:
		c.Problem = fmt.Sprintf("%d allocations hold %d distinct names, want %d", c.Holding, len(holders), slots)
	default:
		c.Converged = true
	}
	return c
}

// slotIndex parses the i of an allocation name "<job>.<group>[i]".
func slotIndex(jobID, group, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, jobID+"."+group+"[")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 {
		return 0, false
	}
	return i, true
}

// verify reads every job of the run and checks its allocations; nil when
// there is nothing to check or it is turned off.
func (r *runner) verify(ctx context.Context) *VerifyResult {
	sc := r.cfg.Scenario
	if r.cfg.NoVerify || ctx.Err() != nil || (sc.Kind != KindPlace && sc.Kind != KindChurn) {
		return nil
	}
	r.setProgress(func() string { return sc.Name + ": reading every job's allocations" })
	start := time.Now()
	v := &VerifyResult{}
	var ids []string
	want := -1
	if sc.Kind == KindPlace {
		want, v.Expected = sc.Count, sc.Jobs
		for i := range sc.Jobs {
			ids = append(ids, r.placeJobID(i))
		}
	} else {
		jobs, _, err := r.client(0).Jobs().PrefixList(r.jobPrefix())
		if err != nil {
			v.ReadErrors++
			v.problem("listing the jobs: %v", err)
		}
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
	}
	v.Jobs = len(ids)

	var mu sync.Mutex // guards v below
	work := make(chan int)
	var wg sync.WaitGroup
	for range verifyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				allocs, err := r.jobAllocs(ctx, i, ids[i])
				mu.Lock()
				if err != nil {
					v.ReadErrors++
					v.problem("%s: reading its allocations: %v", ids[i], err)
					mu.Unlock()
					continue
				}
				c := checkJob(ids[i], want, allocs)
				v.Duplicates += len(c.Duplicates)
				if c.Converged {
					v.Converged++
				} else if c.Problem != "" {
					v.problem("%s: %s", ids[i], c.Problem)
				}
				for _, name := range sortedKeys(c.Duplicates) {
					v.problem("DUPLICATE %s: held by allocations %s", name, strings.Join(c.Duplicates[name], ", "))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range ids {
		work <- i
	}
	close(work)
	wg.Wait()
	v.Seconds = time.Since(start).Seconds()
	return v
}

// jobAllocs reads a job's allocations (every version) from the leader,
// retrying errors as job writes are.
func (r *runner) jobAllocs(ctx context.Context, ci int, jobID string) ([]*nomad.AllocationListStub, error) {
	var out []*nomad.AllocationListStub
	attempt := 0
	err := backoff.Retry(ctx, backoff.New(writeRetryBase, writeRetryLimit), writeRetryFor, retryableWrite, func() error {
		var err error
		out, _, err = r.client(ci+attempt).Jobs().Allocations(jobID, true, (&nomad.QueryOptions{}).WithContext(ctx))
		attempt++
		return err
	})
	return out, err
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
