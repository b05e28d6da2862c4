package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/api"
	"github.com/drover-project/drover/jobspec"
	"github.com/drover-project/drover/server/periodic"
	"github.com/drover-project/drover/structs"
)

func jobCommands() []*command {
	return []*command{
		{name: "job run", synopsis: "Submit a job file and monitor its evaluation", run: runJobRun},
		{name: "job status", synopsis: "List jobs, or show one job with its allocations", run: runJobStatus},
		{name: "job stop", synopsis: "Stop a job (and with -purge remove it)", run: runJobStop},
		{name: "job plan", synopsis: "Dry run: show what submitting a job file would change", run: runJobPlan},
		{name: "job validate", synopsis: "Check a job file as the servers would, without submitting it", run: runJobValidate},
		{name: "job inspect", synopsis: "Print a registered job as JSON", run: runJobInspect},
		{name: "job history", synopsis: "Show the kept versions of a job, with -p their changes", run: runJobHistory},
		{name: "job revert", synopsis: "Register an earlier version of a job again", run: runJobRevert},
		{name: "job scale", synopsis: "Set the count of a job's group", run: runJobScale},
		{name: "job init", synopsis: "Write an example job file", run: runJobInit},
		{name: "job periodic force", synopsis: "Launch a periodic job now, whatever its schedule", run: runJobPeriodicForce},
		{name: "job dispatch", synopsis: "Run a parameterized job once, with a payload and meta", run: runJobDispatch},
	}
}

// varFlags collects repeated -var name=value flags.
type varFlags map[string]string

func (v varFlags) String() string { return "" }

func (v varFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	v[name] = value
	return nil
}

// listFlags collects a repeated string flag.
type listFlags []string

func (l *listFlags) String() string     { return strings.Join(*l, ",") }
func (l *listFlags) Set(s string) error { *l = append(*l, s); return nil }

// jobFileFlags are the flags of commands that read a job file.
type jobFileFlags struct {
	vars     varFlags
	varFiles listFlags
}

func (f *jobFileFlags) register(fs *flag.FlagSet) {
	f.vars = varFlags{}
	fs.Var(f.vars, "var", "set a job file variable: -var name=value (repeatable)")
	fs.Var(&f.varFiles, "var-file", "read job file variables from an HCL file of name = value lines (repeatable)")
}

// parse reads the job file; problems are printed and code returned.
func (f *jobFileFlags) parse(e *env, path string) (*structs.Job, int, bool) {
	job, err := jobspec.ParseFile(path, &jobspec.Options{Vars: f.vars, VarFiles: f.varFiles})
	if err != nil {
		fmt.Fprintf(e.stderr, "Error parsing job file %s:\n%s\n", path, indent(err.Error()))
		return nil, exitError, false
	}
	return job, exitOK, true
}

// parseArgs parses the flags and the one job file argument of a command
// that reads a job file; problems are printed and code returned.
func (f *jobFileFlags) parseArgs(e *env, fs *flag.FlagSet, args []string) (*structs.Job, int, bool) {
	if code, ok := parseFlags(fs, args, 1); !ok {
		return nil, code, false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, exitError, false
	}
	return f.parse(e, fs.Arg(0))
}

func runJobValidate(e *env, args []string) int {
	var af apiFlags
	var jf jobFileFlags
	fs := newFlagSet(e, "job validate", "[options] <file>",
		"Check a job file (HCL or JSON) as the servers would when it is submitted: its syntax here,\n"+
			"then its fields, defaults and driver configs on a server. Nothing is submitted.\n\n"+
			"Exit codes: 0 valid, 1 invalid or error.")
	af.register(fs, e)
	jf.register(fs)
	job, code, ok := jf.parseArgs(e, fs, args)
	if !ok {
		return code
	}
	resp, err := af.client().ValidateJob(context.Background(), job, nil)
	if err != nil {
		return errorf(e, "validating job: %v", err)
	}
	if len(resp.ValidationErrors) > 0 {
		fmt.Fprintln(e.stderr, "Job validation errors:")
		for _, msg := range resp.ValidationErrors {
			fmt.Fprintf(e.stderr, "  * %s\n", msg)
		}
		return exitError
	}
	fmt.Fprintln(e.stdout, "Job validation successful")
	return exitOK
}

func runJobRun(e *env, args []string) int {
	var af apiFlags
	var jf jobFileFlags
	var detach, verbose bool
	var checkIndex string
	fs := newFlagSet(e, "job run", "[options] <file>",
		"Submit a job file (HCL or JSON) and monitor the evaluation it creates.\n\n"+
			"Then follow the placed allocations until their tasks start, printing why a task could not start; "+
			"a job with an update block is followed to the end of its deployment instead.\n\n"+
			"Exit codes: 0 everything was placed, 1 error (or a service job's allocation or deployment failed), 2 some allocations could not be placed.")
	af.register(fs, e)
	jf.register(fs)
	fs.BoolVar(&detach, "detach", false, "return once the job is registered, without monitoring")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	fs.StringVar(&checkIndex, "check-index", "", "register only if the job's modify index is this (0: only if it does not exist)")
	job, code, ok := jf.parseArgs(e, fs, args)
	if !ok {
		return code
	}
	var opts *api.RegisterOptions
	if checkIndex != "" {
		idx, err := strconv.ParseUint(checkIndex, 10, 64)
		if err != nil {
			return usagef(e, "-check-index %q: must be a non-negative integer", checkIndex)
		}
		opts = &api.RegisterOptions{EnforceIndex: true, ModifyIndex: idx}
	}
	c := af.client()
	ctx := context.Background()
	resp, _, err := c.RegisterJob(ctx, job, opts, nil)
	if err != nil {
		var se *api.StatusError
		if errors.As(err, &se) && se.Code == 409 {
			return errorf(e, "submitting job: %s", strings.TrimSpace(se.Body))
		}
		return errorf(e, "submitting job: %v", err)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(e.stdout, "Job Warnings:\n%s\n\n", resp.Warnings)
	}
	if detach || resp.EvalID == "" {
		fmt.Fprintln(e.stdout, "Job registration successful")
		if job.IsPeriodicActive() {
			// As Nomad: a periodic job runs nothing now; say when it will.
			job.Canonicalize()
			fmt.Fprintf(e.stdout, "Approximate next launch time: %s\n", e.nextPeriodicLaunch(job))
		}
		if resp.EvalID != "" {
			fmt.Fprintf(e.stdout, "Evaluation ID: %s\n", resp.EvalID)
		}
		return exitOK
	}
	m := &evalMonitor{e: e, c: c, verbose: verbose}
	if !rolls(job) {
		return m.runJob(ctx, resp.EvalID, job, allocFollowTimeout)
	}
	// As Nomad's CLI: a job with an update block is followed to the end
	// of its deployment (rather than allocation by allocation), which
	// decides the exit code.
	code = m.monitor(ctx, resp.EvalID)
	if code == exitError {
		return code
	}
	if ev, _, err := c.Eval(ctx, resp.EvalID, nil); err != nil || ev.DeploymentID == "" {
		return code // the change made no deployment (nothing to replace)
	}
	if dcode := followDeployment(ctx, e, c, job.ID, resp.JobModifyIndex, verbose); dcode != exitOK {
		return dcode
	}
	return code
}

// rolls reports whether a group of job rolls out through deployments (an
// update block with a positive max_parallel, its own or the job's).
func rolls(job *structs.Job) bool {
	for _, tg := range job.TaskGroups {
		u := tg.Update
		if u == nil {
			u = job.Update
		}
		if u.Rolling() {
			return true
		}
	}
	return false
}

// resolveJob finds a job by ID or unique prefix.
func resolveJob(e *env, c *api.Client, id string) (*structs.JobListStub, int, bool) {
	return resolve(e, "job", id,
		func(prefix string) ([]*structs.JobListStub, error) {
			jobs, _, err := c.Jobs(context.Background(), &api.QueryOptions{Prefix: prefix})
			return jobs, err
		},
		func(j *structs.JobListStub) string { return j.ID },
		func(jobs []*structs.JobListStub) { jobTable(e, e.stderr, jobs) })
}

// resolveJobOf finds, among the jobs keep accepts, one by ID or unique
// prefix (as Nomad's periodic force and dispatch resolve only periodic or
// parameterized jobs, so that a job's children do not make its prefix
// ambiguous).
func resolveJobOf(e *env, c *api.Client, kind, id string, keep func(*structs.JobListStub) bool) (*structs.JobListStub, int, bool) {
	return resolve(e, kind, id,
		func(prefix string) ([]*structs.JobListStub, error) {
			jobs, _, err := c.Jobs(context.Background(), &api.QueryOptions{Prefix: prefix})
			var out []*structs.JobListStub
			for _, j := range jobs {
				if keep(j) {
					out = append(out, j)
				}
			}
			return out, err
		},
		func(j *structs.JobListStub) string { return j.ID },
		func(jobs []*structs.JobListStub) { jobTable(e, e.stderr, jobs) })
}

func runJobStatus(e *env, args []string) int {
	var af apiFlags
	var asJSON, verbose bool
	fs := newFlagSet(e, "job status", "[options] [job]",
		"Without a job, list jobs. With one (an ID or a unique prefix), show it: its summary per group and its allocations.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	c := af.client()
	ctx := context.Background()
	if fs.NArg() == 0 {
		jobs, _, err := c.Jobs(ctx, nil)
		if err != nil {
			return errorf(e, "querying jobs: %v", err)
		}
		if asJSON {
			return printJSON(e, jobs)
		}
		if len(jobs) == 0 {
			fmt.Fprintln(e.stdout, "No running jobs")
			return exitOK
		}
		jobTable(e, e.stdout, jobs)
		return exitOK
	}
	stub, code, ok := resolveJob(e, c, fs.Arg(0))
	if !ok {
		return code
	}
	q := &api.QueryOptions{Namespace: stub.Namespace}
	job, _, err := c.Job(ctx, stub.ID, q)
	if err != nil {
		return errorf(e, "querying job %q: %v", stub.ID, err)
	}
	summary, _, err := c.JobSummary(ctx, stub.ID, q)
	if err != nil && !api.IsNotFound(err) {
		return errorf(e, "querying job summary: %v", err)
	}
	allocs, _, err := c.JobAllocations(ctx, stub.ID, false, q)
	if err != nil {
		return errorf(e, "querying job allocations: %v", err)
	}
	if asJSON {
		evals, _, err := c.JobEvaluations(ctx, stub.ID, q)
		if err != nil {
			return errorf(e, "querying job evaluations: %v", err)
		}
		return printJSON(e, map[string]any{"Job": job, "Summary": summary, "Allocations": allocs, "Evaluations": evals})
	}
	status := job.Status
	if job.Stop {
		status += " (stopped)"
	}
	basic := []string{
		"ID", job.ID,
		"Name", job.Name,
		"Submit Date", e.formatUnixNano(job.SubmitTime),
		"Type", job.Type,
		"Priority", strconv.Itoa(job.Priority),
		"Datacenters", strings.Join(job.Datacenters, ","),
		"Namespace", job.Namespace,
		"Node Pool", jobNodePool(job),
		"Status", status,
		"Periodic", strconv.FormatBool(job.IsPeriodic()),
		"Parameterized", strconv.FormatBool(job.IsParameterized()),
	}
	if job.IsPeriodic() {
		basic = append(basic, "Next Periodic Launch", e.nextPeriodicLaunch(job))
	}
	kv(e.stdout, basic...)
	fmt.Fprintln(e.stdout)
	switch {
	case job.IsPeriodic():
		return e.childrenStatus(c, job, summary, q, structs.PeriodicLaunchSuffix,
			"Previously Launched Jobs", "No instances of periodic job found")
	case job.IsParameterized():
		return e.childrenStatus(c, job, summary, q, structs.DispatchLaunchSuffix,
			"Dispatched Jobs", "No dispatched instances of parameterized job found")
	}
	fmt.Fprintln(e.stdout, "Summary")
	t := newTable(e.stdout)
	t.row("Task Group", "Queued", "Starting", "Running", "Failed", "Complete", "Lost", "Unknown")
	for _, tg := range job.TaskGroups {
		var s structs.TaskGroupSummary
		if summary != nil {
			s = summary.Summary[tg.Name]
		}
		t.row(tg.Name, itoa(s.Queued), itoa(s.Starting), itoa(s.Running), itoa(s.Failed),
			itoa(s.Complete), itoa(s.Lost), itoa(s.Unknown))
	}
	t.flush()
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, "Allocations")
	if len(allocs) == 0 {
		fmt.Fprintln(e.stdout, "No allocations placed")
		return exitOK
	}
	allocTable(e, e.stdout, allocs, verbose, true)
	taskFailureTable(e, e.stdout, allocs, verbose)
	return exitOK
}

func itoa(n int) string { return strconv.Itoa(n) }

// jobTable lists job stubs.
func jobTable(e *env, w io.Writer, jobs []*structs.JobListStub) {
	t := newTable(w)
	t.row("ID", "Type", "Priority", "Status", "Submit Date")
	for _, j := range jobs {
		status := j.Status
		if j.Stop {
			status += " (stopped)"
		}
		t.row(j.ID, j.Type, strconv.Itoa(j.Priority), status, e.formatUnixNano(j.SubmitTime))
	}
	t.flush()
}

// allocTable lists allocation stubs, newest first, as Nomad does.
func allocTable(e *env, w io.Writer, allocs []*structs.AllocListStub, verbose, withNode bool) {
	allocs = append([]*structs.AllocListStub(nil), allocs...)
	sort.SliceStable(allocs, func(i, j int) bool {
		if allocs[i].CreateIndex != allocs[j].CreateIndex {
			return allocs[i].CreateIndex > allocs[j].CreateIndex
		}
		return allocs[i].ID < allocs[j].ID
	})
	t := newTable(w)
	header := []string{"ID"}
	if withNode {
		header = append(header, "Node ID")
	}
	t.row(append(header, "Task Group", "Version", "Desired", "Status", "Created", "Modified")...)
	for _, a := range allocs {
		row := []string{shortID(a.ID, verbose)}
		if withNode {
			row = append(row, shortID(a.NodeID, verbose))
		}
		t.row(append(row, a.TaskGroup, strconv.FormatUint(a.JobVersion, 10), a.DesiredStatus, a.ClientStatus,
			e.agoUnixNano(a.CreateTime), e.agoUnixNano(a.ModifyTime))...)
	}
	t.flush()
}

func runJobStop(e *env, args []string) int {
	var af apiFlags
	var purge, detach, verbose, yes bool
	fs := newFlagSet(e, "job stop", "[options] <job>",
		"Stop a job's allocations and mark it stopped; -purge also removes it. Monitors the evaluation unless -detach.")
	af.register(fs, e)
	fs.BoolVar(&purge, "purge", false, "remove the job instead of keeping it stopped")
	fs.BoolVar(&detach, "detach", false, "return once the stop is registered, without monitoring")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	fs.BoolVar(&yes, "yes", false, "accepted for Nomad compatibility (drover never prompts here)")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	c := af.client()
	stub, code, ok := resolveJob(e, c, fs.Arg(0))
	if !ok {
		return code
	}
	ctx := context.Background()
	resp, _, err := c.DeregisterJob(ctx, stub.ID, purge, &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "deregistering job: %v", err)
	}
	if detach || resp.EvalID == "" {
		fmt.Fprintln(e.stdout, resp.EvalID)
		return exitOK
	}
	return (&evalMonitor{e: e, c: c, verbose: verbose}).monitor(ctx, resp.EvalID)
}

func runJobInspect(e *env, args []string) int {
	var af apiFlags
	var asJSON bool
	fs := newFlagSet(e, "job inspect", "[options] <job>",
		"Print a registered job as JSON ({\"Job\": {...}}), which drover job run reads back.")
	af.register(fs, e)
	fs.BoolVar(&asJSON, "json", true, "print JSON (always on; accepted for symmetry with other reads)")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	c := af.client()
	stub, code, ok := resolveJob(e, c, fs.Arg(0))
	if !ok {
		return code
	}
	job, _, err := c.Job(context.Background(), stub.ID, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "querying job %q: %v", stub.ID, err)
	}
	return printJSON(e, map[string]any{"Job": job})
}

// exampleJob is the commented job `drover job init` writes. It must place
// in full on a single-node dev agent (TestJobInitPlacesOnDevAgent).
//
//go:embed example.nomad.hcl
var exampleJob string

func runJobInit(e *env, args []string) int {
	fs := newFlagSet(e, "job init", "[options] [file]",
		"Write a commented example job file (default "+jobspec.ExampleFileName+").")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	path := jobspec.ExampleFileName
	if fs.NArg() == 1 {
		path = fs.Arg(0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return errorf(e, "writing %s: the file already exists", path)
	}
	if err != nil {
		return errorf(e, "writing %s: %v", path, err)
	}
	if _, err := f.WriteString(exampleJob); err != nil {
		f.Close()
		return errorf(e, "writing %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		return errorf(e, "writing %s: %v", path, err)
	}
	fmt.Fprintf(e.stdout, "Example job file written to %s\n", path)
	return exitOK
}

// nextPeriodicLaunch renders a periodic job's next launch as Nomad's
// job status does: the time and how far from now it is.
func (e *env) nextPeriodicLaunch(job *structs.Job) string {
	if job.Stop {
		return "none (job stopped)"
	}
	if !job.Periodic.Enabled {
		return "none (periodic block disabled)"
	}
	sched, err := periodic.NewSchedule(job.Periodic)
	if err != nil {
		return "none (" + err.Error() + ")"
	}
	now := e.now()
	next := sched.Next(now)
	if next.IsZero() {
		return "none"
	}
	return fmt.Sprintf("%s (%s from now)", e.formatTime(next), next.Truncate(time.Second).Sub(now.Truncate(time.Second)))
}

// childrenStatus prints what job status shows of a periodic or
// parameterized job instead of allocations (it has none): its children by
// status and the jobs it launched, found as Nomad's CLI finds them, by the
// prefix "<id>/periodic-" or "<id>/dispatch-".
func (e *env) childrenStatus(c *api.Client, job *structs.Job, summary *structs.JobSummary, q *api.QueryOptions, suffix, title, none string) int {
	fmt.Fprintln(e.stdout, "Children Job Summary")
	var ch structs.JobChildrenSummary
	if summary != nil && summary.Children != nil {
		ch = *summary.Children
	}
	t := newTable(e.stdout)
	t.row("Pending", "Running", "Dead")
	t.row(strconv.FormatInt(ch.Pending, 10), strconv.FormatInt(ch.Running, 10), strconv.FormatInt(ch.Dead, 10))
	t.flush()
	pq := *q
	pq.Prefix = job.ID + suffix
	children, _, err := c.Jobs(context.Background(), &pq)
	if err != nil {
		return errorf(e, "querying the jobs launched: %v", err)
	}
	t = newTable(e.stdout)
	t.row("ID", "Status")
	n := 0
	for _, child := range children {
		if child.ParentID == job.ID {
			t.row(child.ID, child.Status)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(e.stdout)
		fmt.Fprintln(e.stdout, none)
		return exitOK
	}
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout, title)
	t.flush()
	return exitOK
}

func runJobPeriodicForce(e *env, args []string) int {
	var af apiFlags
	var detach, verbose bool
	fs := newFlagSet(e, "job periodic force", "[options] <job>",
		"Launch a periodic job now, whatever its schedule. Monitors the child's evaluation unless -detach.")
	af.register(fs, e)
	fs.BoolVar(&detach, "detach", false, "return once the launch is registered, printing the evaluation ID")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError
	}
	c := af.client()
	stub, code, ok := resolveJobOf(e, c, "periodic job", fs.Arg(0), func(j *structs.JobListStub) bool { return j.Periodic })
	if !ok {
		return code
	}
	ctx := context.Background()
	resp, _, err := c.PeriodicForce(ctx, stub.ID, &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "forcing periodic job %q: %v", stub.ID, err)
	}
	if detach {
		fmt.Fprintln(e.stdout, "Force periodic successful")
		fmt.Fprintf(e.stdout, "Evaluation ID: %s\n", resp.EvalID)
		return exitOK
	}
	return (&evalMonitor{e: e, c: c, verbose: verbose}).monitor(ctx, resp.EvalID)
}

func runJobDispatch(e *env, args []string) int {
	var af apiFlags
	var detach, verbose bool
	var token string
	meta := varFlags{}
	fs := newFlagSet(e, "job dispatch", "[options] <parameterized job> [input source]",
		"Run a parameterized job once. The payload is read from the input source, a file or - for standard input "+
			"(at most 16 KiB). Monitors the dispatched job's evaluation unless -detach.")
	af.register(fs, e)
	fs.Var(meta, "meta", "a meta key=value of the dispatched job (repeatable)")
	fs.StringVar(&token, "idempotency-token", "", "a token: a dispatch with the token of a child that is not dead returns that child")
	fs.BoolVar(&detach, "detach", false, "return once the job is dispatched, without monitoring")
	fs.BoolVar(&verbose, "verbose", false, "show full IDs")
	if code, ok := parseFlags(fs, args, 2); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return exitError
	}
	var payload []byte
	if fs.NArg() == 2 {
		var err error
		if src := fs.Arg(1); src == "-" {
			payload, err = io.ReadAll(io.LimitReader(e.stdin, structs.DispatchPayloadSizeLimit+1))
		} else {
			payload, err = os.ReadFile(src)
		}
		if err != nil {
			return errorf(e, "reading input data: %v", err)
		}
	}
	c := af.client()
	stub, code, ok := resolveJobOf(e, c, "parameterized job", fs.Arg(0), func(j *structs.JobListStub) bool { return j.ParameterizedJob })
	if !ok {
		return code
	}
	ctx := context.Background()
	resp, _, err := c.DispatchJob(ctx, stub.ID, payload, meta, token, &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		return errorf(e, "dispatching job: %v", err)
	}
	pairs := []string{"Dispatched Job ID", resp.DispatchedJobID}
	if resp.EvalID != "" {
		pairs = append(pairs, "Evaluation ID", shortID(resp.EvalID, verbose))
	}
	kv(e.stdout, pairs...)
	if detach || resp.EvalID == "" {
		return exitOK
	}
	fmt.Fprintln(e.stdout)
	return (&evalMonitor{e: e, c: c, verbose: verbose}).monitor(ctx, resp.EvalID)
}

// jobNodePool is the job's node pool ("default" for a job stored before
// pools existed).
func jobNodePool(job *structs.Job) string {
	if job.NodePool == "" {
		return structs.NodePoolDefault
	}
	return job.NodePool
}
